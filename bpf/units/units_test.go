package units

import (
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
