package measure

import (
	"math"
	"testing"
)

// TestCyclesCancelTheClockRate: rounds whose time doubles because the
// clock rate halved (the cycle length doubled) cost the same cycles, which
// a time's low quantile, sitting in the fast rounds, does not show; a
// round without a cycle length gives no figure.
func TestCyclesCancelTheClockRate(t *testing.T) {
	r := &Rounds{Ns: [][]float64{{5, 10, 5, 10, 10, 10, 10, 10}}}
	r.CycleNs = [][]float64{{0.25, 0.5, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5}}
	if c := r.Cycles(0); c.Value != 20 || !c.Covers(20) || c.Half() != 0 {
		t.Errorf("cycles %+v, want exactly 20 with no spread", c)
	}
	if g := r.GHz(0); g != 2 {
		t.Errorf("median rate %v GHz, want 2", g)
	}
	r.CycleNs[0][3] = 0
	if c := r.Cycles(0); c.Value != 20 {
		t.Errorf("cycles %+v with one call unmeasured, want 20 from the others", c)
	}
	r.CycleNs[0] = make([]float64, 8)
	if c, g := r.Cycles(0), r.GHz(0); !math.IsNaN(c.Value) || !math.IsNaN(g) {
		t.Errorf("cycles %+v, rate %v with no call measured, want NaN", c, g)
	}
	r.CycleNs = nil
	if c, g := r.Cycles(0), r.GHz(0); !math.IsNaN(c.Value) || !math.IsNaN(g) {
		t.Errorf("cycles %+v, rate %v without cycle lengths, want NaN", c, g)
	}
}

// TestCyclesAreTheMedian: a call's cycles err both ways when the clock
// rate changed between the call and its chain, so the figure is their
// median, not the low quantile that would sit in the calls whose chain
// ran slower than they did.
func TestCyclesAreTheMedian(t *testing.T) {
	r := &Rounds{Ns: [][]float64{make([]float64, 11)}, CycleNs: [][]float64{make([]float64, 11)}}
	for i, c := range []float64{17, 18, 20, 20, 20, 20, 20, 20, 20, 22, 23} {
		r.Ns[0][i], r.CycleNs[0][i] = c/4, 0.25
	}
	if c := r.Cycles(0); c.Value != 20 || !c.Covers(20) {
		t.Errorf("cycles %+v, want the median 20", c)
	}
}

// TestRunMeasuresCycles: with sizing.Cycles every stream's call of every
// round gets a cycle length; without, none does.
func TestRunMeasuresCycles(t *testing.T) {
	stream := func(size uint32) (float64, error) { return 1, nil }
	sz := sizing{Warm: 10, Min: 100, Max: 100, Cycles: true}
	r, err := run(Budget{Units: 500}, sz, nil, stream, stream)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count() != 5 || len(r.CycleNs) != 2 || len(r.CycleNs[0]) != 5 || len(r.CycleNs[1]) != 5 {
		t.Fatalf("cycle lengths %v for %d rounds of 2 streams, want 5 per stream", r.CycleNs, r.Count())
	}
	sz.Cycles = false
	if r, err = run(Budget{Units: 500}, sz, nil, stream, stream); err != nil {
		t.Fatal(err)
	}
	if len(r.CycleNs[0])+len(r.CycleNs[1]) != 0 || !math.IsNaN(r.Cycles(0).Value) {
		t.Fatalf("cycle lengths %v without sizing.Cycles, want none", r.CycleNs)
	}
}
