package labels

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// kconfig is the running kernel's build configuration; vals is nil when no
// config could be read, and why says so.
type kconfig struct {
	vals map[string]string
	why  string
}

func (s source) kernelConfig(release string, releaseOK bool) kconfig {
	var whys []string
	if b, err := s.readFile("/proc/config.gz"); err == nil {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, err = io.ReadAll(zr)
		}
		if err == nil {
			return kconfig{vals: parseConfig(b)}
		}
		whys = append(whys, fmt.Sprintf("/proc/config.gz: %v", err))
	} else if errors.Is(err, fs.ErrNotExist) {
		whys = append(whys, "no /proc/config.gz")
	} else {
		whys = append(whys, err.Error())
	}
	p := "/boot/config-" + release
	if !releaseOK {
		whys = append(whys, "kernel release unknown")
	} else if b, err := s.readFile(p); err == nil {
		return kconfig{vals: parseConfig(b)}
	} else if errors.Is(err, fs.ErrNotExist) {
		whys = append(whys, "no "+p)
	} else {
		whys = append(whys, err.Error())
	}
	return kconfig{why: strings.Join(whys, ", ")}
}

// parseConfig reads .config syntax; "# CONFIG_X is not set" becomes "n" so
// that a known-absent option differs from an option this kernel predates.
func parseConfig(b []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutSuffix(strings.TrimPrefix(line, "# "), " is not set"); ok && strings.HasPrefix(line, "# CONFIG_") {
			m[name] = "n"
		} else if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			m[k] = oneLine(strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	return m
}

func (k kconfig) known() bool { return k.vals != nil }

// on reports whether any of names is built in (options get renamed).
func (k kconfig) on(names ...string) bool {
	for _, n := range names {
		if v := k.vals[n]; v == "y" || v == "m" {
			return true
		}
	}
	return false
}

// yesNo is y or n for a boolean option, or unknown without a config.
func (k kconfig) yesNo(name string) string {
	if !k.known() {
		return k.value(name)
	}
	if k.on(name) {
		return "y"
	}
	return "n"
}

func (k kconfig) value(name string) string {
	if !k.known() {
		return "unknown (" + k.why + ")"
	}
	if v, ok := k.vals[name]; ok && v != "" {
		return v
	}
	return "unknown (no " + name + " in kernel config)"
}

// parseSpectreV2 names the indirect-call thunk that a spectre_v2 vulnerability
// string implies: "on" (retpoline), "lfence" (lfence; jmp, which kernels
// before 5.17 called "AMD retpoline"), "minimal" (retpolines in assembly
// only: the compiler lacked them), or "off". Only the mode, before the first
// "," (kernels before 6.9) or ";" (later), is read: the rest (IBPB, STIBP,
// RSB filling, BHI: Retpoline...) does not change the thunk.
func parseSpectreV2(s string) string {
	mode := strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(mode, ",;"); i >= 0 {
		mode = mode[:i]
	}
	switch {
	case strings.Contains(mode, "minimal"):
		return "minimal"
	case strings.Contains(mode, "amd retpoline"), strings.Contains(mode, "lfence"):
		return "lfence"
	case strings.Contains(mode, "retpoline"):
		return "on"
	case strings.HasPrefix(mode, "mitigation:"), strings.HasPrefix(mode, "vulnerable"), mode == "not affected":
		return "off"
	}
	return oneLine("unknown (unrecognised spectre_v2: " + s + ")")
}

// detectIBT: the cpuinfo flag means the CPU has IBT and no ibt=off cleared
// it; the kernel enforces IBT only when built with X86_KERNEL_IBT.
func detectIBT(cfg kconfig, cmd cmdline, cpu cpuInfo) string {
	switch {
	case cmd.last("ibt", "") == "off":
		return "off (ibt=off)"
	case cpu.flags == nil:
		return "unknown (no flags in /proc/cpuinfo)"
	case !cpu.flags["ibt"]:
		return "off (cpu lacks ibt)"
	case !cfg.known():
		return "unknown (cpu has ibt; " + cfg.why + ")"
	case cfg.on("CONFIG_X86_KERNEL_IBT"):
		return "on"
	}
	return "off (kernel built without X86_KERNEL_IBT)"
}

// kallsyms is what /proc/kallsyms says about CFI.
type kallsyms struct {
	why     string // non-empty when the symbols cannot be trusted
	cfi     bool   // __cfi_ preambles: clang kCFI is built in
	fineIBT bool   // fineibt_preamble_start: FineIBT is built in
}

func (s source) kallsyms() kallsyms {
	b, err := s.readFile("/proc/kallsyms")
	if errors.Is(err, fs.ErrNotExist) {
		return kallsyms{why: "no /proc/kallsyms"}
	} else if err != nil {
		return kallsyms{why: err.Error()}
	}
	var k kallsyms
	nonzero := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		nonzero = nonzero || strings.Trim(f[0], "0") != ""
		k.cfi = k.cfi || strings.HasPrefix(f[2], "__cfi_")
		k.fineIBT = k.fineIBT || f[2] == "fineibt_preamble_start"
	}
	if !nonzero {
		// kptr_restrict hides addresses, and with them whether the
		// list is complete.
		return kallsyms{why: "kallsyms addresses hidden"}
	}
	return k
}

// detectCFI names the CFI scheme the kernel runs: clang's kCFI, FineIBT (kCFI
// hashes checked by the callee behind an ENDBR, patched in at boot), or off.
// FineIBT is chosen at boot when the kernel was built with FINEIBT and the
// mode is "auto" (cfi=auto, or CFI_AUTO_DEFAULT=y, or kernels before that
// option existed) and the CPU has IBT; cfi=kcfi|fineibt|off choose directly.
func detectCFI(cfg kconfig, cmd cmdline, syms kallsyms, cpu cpuInfo) string {
	var fine bool
	mode := "auto"
	switch {
	case cfg.known():
		if !cfg.on("CONFIG_CFI_CLANG", "CONFIG_CFI") { // renamed in 6.18
			return "off"
		}
		fine = cfg.on("CONFIG_FINEIBT")
		if _, ok := cfg.vals["CONFIG_CFI_AUTO_DEFAULT"]; ok && !cfg.on("CONFIG_CFI_AUTO_DEFAULT") {
			mode = "kcfi"
		}
	case syms.why != "":
		return "unknown (" + cfg.why + "; " + syms.why + ")"
	case !syms.cfi:
		return "off (no __cfi_ symbols)"
	default:
		fine = syms.fineIBT
	}
	if !fine {
		return "kcfi" // cfi= is parsed only by FineIBT kernels
	}
	for _, v := range cmd.values("cfi") {
		for _, w := range strings.Split(v, ",") {
			if w == "auto" || w == "kcfi" || w == "fineibt" || w == "off" {
				mode = w
			}
		}
	}
	switch {
	case mode != "auto":
		return mode // fineibt is patched in even without IBT
	case cpu.flags == nil:
		return "unknown (kcfi built in; fineibt chosen at boot if cpu has ibt)"
	case !cpu.flags["ibt"]:
		return "kcfi"
	case !cfg.known():
		return "unknown (kcfi built in; fineibt chosen at boot if CFI_AUTO_DEFAULT)"
	}
	return "fineibt"
}

// detectCallDepth: call depth tracking (return thunks that count calls,
// "stuffing") runs only when retbleed or ITS reports stuffing.
func detectCallDepth(cfg kconfig, cmd cmdline, retbleed string, retbleedOK, vulnOK bool, its string) string {
	switch {
	case strings.Contains(retbleed, "Stuffing") || strings.Contains(its, "Stuffing"):
		return "on"
	case cfg.known() && !cfg.on("CONFIG_CALL_DEPTH_TRACKING", "CONFIG_MITIGATION_CALL_DEPTH_TRACKING"):
		return "off (not built in)"
	case retbleedOK:
		return "off"
	case cmd.last("retbleed", "") == "stuff":
		return "unknown (retbleed=stuff on cmdline; no retbleed file)"
	case vulnOK:
		// Call depth tracking (6.2) came after retbleed reporting (5.19).
		return "off (kernel predates retbleed reporting)"
	}
	return "unknown (no vulnerabilities files)"
}

// parsePreempt: debugfs tells the live mode ("none voluntary (full) lazy");
// without it, PREEMPT_DYNAMIC kernels only say how they booted.
func parsePreempt(debugfs, unameV string, cfg kconfig, cmd cmdline) string {
	if i, j := strings.Index(debugfs, "("), strings.Index(debugfs, ")"); i >= 0 && j > i {
		if mode := oneLine(debugfs[i+1 : j]); mode != "" {
			return mode
		}
	}
	words := strings.Fields(unameV)
	has := func(w string) bool {
		for _, x := range words {
			if x == w {
				return true
			}
		}
		return false
	}
	static := func() string {
		for _, m := range []struct{ opt, mode string }{
			{"CONFIG_PREEMPT_LAZY", "lazy"}, {"CONFIG_PREEMPT", "full"},
			{"CONFIG_PREEMPT_VOLUNTARY", "voluntary"}, {"CONFIG_PREEMPT_NONE", "none"},
		} {
			if cfg.on(m.opt) {
				return m.mode
			}
		}
		return ""
	}
	switch {
	case has("PREEMPT_RT") || cfg.on("CONFIG_PREEMPT_RT"):
		return "rt"
	case has("PREEMPT_DYNAMIC") || cfg.on("CONFIG_PREEMPT_DYNAMIC"):
		boot := static()
		if p := cmd.last("preempt", ""); p != "" {
			boot = p
		}
		if boot == "" {
			return "dynamic (mode unknown: no debugfs)"
		}
		return "dynamic (boot mode " + boot + "; no debugfs)"
	case has("PREEMPT"):
		return "full"
	}
	if m := static(); m != "" {
		return m
	}
	if unameV == "" {
		return "unknown (no debugfs, uname -v or kernel config)"
	}
	return "unknown (no PREEMPT in uname -v: none or voluntary)"
}
