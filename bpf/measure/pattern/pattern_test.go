package pattern

import "testing"

// TestSelected: the rows measure.Family measures are those testing would
// run as benchmarks of their own for the same -bench and -skip.
func TestSelected(t *testing.T) {
	const name = "BenchmarkXDP/prog=parse/size=64"
	for _, tc := range []struct {
		bench, skip string
		want        bool
	}{
		{".", "", true},
		{"XDP", "", true},
		{"^BenchmarkXDP$", "", true},
		{"^BenchmarkXDP$/^prog=(drop|parse)$/^size=64$", "", true},
		{"^BenchmarkXDP$/^prog=(drop|pass)$", "", false},
		{"^BenchmarkXDP$/prog=parse/size=1500", "", false},
		{"Dispatcher|XDP/parse", "", true},
		{"Dispatcher|XDP/drop", "", false},
		{"XDP/prog=parse/size=64/deeper", "", false}, // partial: not run as a result
		{"XDP/[a-z]+=parse", "", true},
		{".", "parse", true}, // -skip at depth 1 matches BenchmarkXDP: no
		{".", "XDP/parse", false},
		{".", "XDP/parse/64/x", true}, // a partial skip skips nothing
		{"", "", true},                // no pattern at depth: every row
	} {
		if got := selected(tc.bench, tc.skip, name); got != tc.want {
			t.Errorf("-bench %q -skip %q: selected %v, want %v", tc.bench, tc.skip, got, tc.want)
		}
	}
}
