package labels

import (
	"strings"
	"unicode"
)

// cmdline is the kernel command line's options, without init's arguments.
type cmdline []string

// parseCmdline splits like the kernel's next_arg: on blanks outside double
// quotes, stopping at a lone "--", after which the words belong to init.
func parseCmdline(s string) cmdline {
	var out cmdline
	var cur strings.Builder
	quoted := false
	flush := func() bool {
		w := cur.String()
		cur.Reset()
		if w == "--" {
			return false
		}
		if w != "" {
			out = append(out, w)
		}
		return true
	}
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if !flush() {
				return out
			}
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// values are the values of every name=value option, in order.
func (c cmdline) values(name string) []string {
	var vs []string
	for _, o := range c {
		if k, v, ok := strings.Cut(o, "="); ok && k == name {
			vs = append(vs, strings.Trim(v, `"`))
		}
	}
	return vs
}

// last is the value of the last name=value option (the one the kernel
// keeps), or def. A blank value (mitigations=), which the kernel's
// parsers reject and ignore, is skipped.
func (c cmdline) last(name, def string) string {
	vs := c.values(name)
	for i := len(vs) - 1; i >= 0; i-- {
		if v := oneLine(vs[i]); v != "" {
			return v
		}
	}
	return def
}

func (c cmdline) has(option string) bool {
	for _, o := range c {
		if o == option {
			return true
		}
	}
	return false
}

func (c cmdline) mitigationsOff() bool {
	return c.last("mitigations", "") == "off" || c.last("spectre_v2", "") == "off" || c.has("nospectre_v2")
}

// mitigationParams are the options that change speculation mitigations,
// CFI or IBT, and so the cost of calls; `mitigations=` has its own label.
var mitigationParams = map[string]bool{
	"spectre_v2": true, "spectre_v2_user": true, "nospectre_v1": true, "nospectre_v2": true,
	"spectre_bhi": true, "nospectre_bhb": true, "spec_store_bypass_disable": true,
	"nospec_store_bypass_disable": true, "ssbd": true, "retbleed": true, "spec_rstack_overflow": true,
	"pti": true, "nopti": true, "kpti": true, "l1tf": true, "mds": true, "tsx": true,
	"tsx_async_abort": true, "mmio_stale_data": true, "srbds": true, "gather_data_sampling": true,
	"reg_file_data_sampling": true, "indirect_target_selection": true, "tsa": true, "vmscape": true,
	"cfi": true, "ibt": true, "nosmt": true, "l1d_flush": true, "kvm.nx_huge_pages": true,
	"kvm-intel.vmentry_l1d_flush": true, "arm64.nobti": true, "arm64.nopauth": true,
	// Red Hat's and old distribution kernels' own switches.
	"noibrs": true, "noibpb": true, "ibrs": true, "ibpb": true, "retp": true,
}

func (c cmdline) mitigationOptions() string {
	var out []string
	for _, o := range c {
		if k, _, _ := strings.Cut(o, "="); mitigationParams[k] {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}
