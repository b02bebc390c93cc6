package benchfile

import (
	"strings"

	"golang.org/x/perf/benchfmt"
)

// A Name is a sub-benchmark name split into the family and its
// /key=value parts.
type Name struct {
	Family string            // "BenchmarkDispatcher"
	Keys   map[string]string // dispatcher=k0, fill=none, prog=xdp
	Order  []string          // the keys as they appear in the name
}

// String is the name as go test prints it, without the GOMAXPROCS suffix.
func (n Name) String() string {
	var b strings.Builder
	b.WriteString(n.Family)
	for _, k := range n.Order {
		b.WriteString("/" + k)
		if v := n.Keys[k]; v != "" {
			b.WriteString("=" + v)
		}
	}
	return b.String()
}

// Short is the name without the family.
func (n Name) Short() string {
	return strings.TrimPrefix(strings.TrimPrefix(n.String(), n.Family), "/")
}

// ParseName splits "BenchmarkX/a=1/b=2" (with or without the Benchmark
// prefix and the -<GOMAXPROCS> suffix) into its family and keys, as
// benchfmt.Name.Parts splits it. A part without '=' is kept as a key with
// an empty value.
func ParseName(s string) Name {
	if !strings.HasPrefix(s, "Benchmark") {
		s = "Benchmark" + s
	}
	base, parts := benchfmt.Name(s).Parts()
	n := Name{Family: string(base), Keys: map[string]string{}}
	for _, p := range parts {
		p, ok := strings.CutPrefix(string(p), "/")
		if !ok {
			continue // -<GOMAXPROCS>
		}
		k, v, _ := strings.Cut(p, "=")
		n.Keys[k] = v
		n.Order = append(n.Order, k)
	}
	return n
}

// A Sel selects one metric of one sub-benchmark, across its runs.
type Sel struct {
	Name
	Unit string
}

// String is the name and the unit.
func (s Sel) String() string { return s.Name.String() + " " + s.Unit }

// Matches reports whether a sub-benchmark is the one s selects: same
// family, and every key s names has the value s wants.
func (s Sel) Matches(n Name) bool {
	if n.Family != s.Family {
		return false
	}
	for k, v := range s.Keys {
		if n.Keys[k] != v {
			return false
		}
	}
	return true
}

// coveredBy reports whether skipping n skips what s selects: n is s or a
// parent of it.
func (s Sel) coveredBy(n Name) bool {
	if n.Family != s.Family {
		return false
	}
	for k, v := range n.Keys {
		if s.Keys[k] != v {
			return false
		}
	}
	return true
}

// BootLabels are the labels that name a boot: Parse warns when one
// changes inside a file, and the report prints them for every file.
var BootLabels = []string{"kernel", "virt", "mitigations", "retpoline", "cfi", "its"}
