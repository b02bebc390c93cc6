package units

import (
	"slices"
	"strings"
	"testing"
)

func TestCounted(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"ns/op", "instrs/op", true},
		{"delta-ns/op", "delta-instrs/op", true},
		{"delta-ci95-ns", "delta-ci95-instrs", true},
		{"delta-ns/prog", "delta-instrs/prog", true},
		{"ns/call", "instrs/call", true},
		{"call-us", "call-kinstrs", true},
		{"rx-ns/pkt", "rx-instrs/pkt", true},
		{"jited-bytes", "jited-bytes", true},
		{"delta-rel", "delta-rel", true},
		{"pps", "", false},
		{"capacity-pps", "", false},
		{"calls/s", "", false},
	} {
		got, ok := Counted(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Counted(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// Every unit the suite declares is either a rate or comes out with no
	// "ns" or "us" left in it.
	for _, l := range Lines {
		u := strings.Fields(l)[1]
		got, ok := Counted(u)
		if ok && (strings.Contains("-"+got+"-", "-ns") || strings.Contains(got, "ns/") || strings.HasSuffix(got, "-us")) {
			t.Errorf("declared unit %s counts as %s: still a time", u, got)
		}
	}
}

func TestSelectSplitsLines(t *testing.T) {
	line, diag := Select(false), Select(true)
	if len(line)+len(diag) != len(Lines) {
		t.Fatalf("%d + %d Unit lines, want the %d of Lines", len(line), len(diag), len(Lines))
	}
	if len(diag) != len(Diagnostic) {
		t.Errorf("%d diagnostic Unit lines for %d diagnostic units: a unit of Diagnostic has no Unit line", len(diag), len(Diagnostic))
	}
	for _, l := range line {
		if strings.Contains(l, " steal-frac ") || strings.Contains(l, " call-us ") {
			t.Errorf("a diagnostic's Unit line before the results: %s", l)
		}
	}
	for _, want := range []string{"Unit ns/op ", "Unit cycles/op ", "Unit delta-ns/op ", "Unit contended-frac "} {
		if !slices.ContainsFunc(line, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no %q line before the results", want)
		}
	}
}

// TestIsControl: the A/A rows of XDP and Dispatcher are controls, with
// or without go test's -GOMAXPROCS suffix; a row that merely contains aa
// is not.
func TestIsControl(t *testing.T) {
	for name, want := range map[string]bool{
		"BenchmarkXDP/prog=aa/size=64":                         true,
		"BenchmarkXDP/prog=aa/size=64-2":                       true,
		"BenchmarkDispatcher/dispatcher=aa/fill=none/prog=xdp": true,
		"BenchmarkX/row=aa-2":                                  true,
		"BenchmarkXDP/prog=drop/size=64":                       false,
		"BenchmarkX/row=aab":                                   false,
		"BenchmarkX/row=baa-2":                                 false,
	} {
		if got := IsControl(name); got != want {
			t.Errorf("IsControl(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestHeader: where the clocks keep time a results file's Unit lines
// leave the diagnostics to their own file; where they count instructions
// a time unit reads in instructions and the diagnostics file has none.
func TestHeader(t *testing.T) {
	has := func(lines []string, unit string) bool {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) >= 2 && f[1] == unit {
				return true
			}
		}
		return false
	}
	if timed := Header(false); !has(timed, "ns/op") || has(timed, "call-us") || has(timed, "instrs/op") {
		t.Errorf("Header(false) = %v: want ns/op, no diagnostic, no instruction unit", timed)
	}
	if !has(DiagHeader(false), "call-us") || DiagHeader(true) != nil {
		t.Errorf("DiagHeader: %v, %v; want call-us where time is kept, nothing where instructions are counted", DiagHeader(false), DiagHeader(true))
	}
	if counted := Header(true); !has(counted, "instrs/op") || !has(counted, "delta-instrs/op") || has(counted, "ns/op") {
		t.Errorf("Header(true) = %v: want instrs/op and delta-instrs/op, no ns/op", counted)
	}
}
