package measure

import (
	"math"
	"runtime"
	"testing"
)

// TestCycleNs: the multiplication chain's product and the spread loop's
// sum are what they ran (so the assembler loops ran every iteration); a
// gauge is a cycle length and a load, or nothing where the clock did not
// advance (a busy machine can do that to a 6 µs chain: no timing is
// asserted); elsewhere than amd64 there is none, and no cycles are
// reported.
func TestCycleNs(t *testing.T) {
	for _, n := range []uint64{0, 1, chainIters} {
		if got, want := mulChain(n), pow3(8*n); got != want {
			t.Fatalf("mulChain(%d) = %d, want 3^%d mod 2^64 = %d", n, got, 8*n, want)
		}
		if got, want := mulSpread(n), 4*pow3(n)+14*n; got != want {
			t.Fatalf("mulSpread(%d) = %d, want 4*3^%d + 14*%d mod 2^64 = %d", n, got, n, n, want)
		}
	}
	for range 10 {
		g := ReadGauge()
		if runtime.GOARCH != "amd64" {
			if g != (Gauge{}) {
				t.Fatalf("ReadGauge() = %+v without the chains, want none", g)
			}
			return
		}
		if s := SpreadLoad(); s < 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			t.Fatalf("SpreadLoad() = %v, want a finite non-negative ratio", s)
		}
		if g.CycleNs < 0 || math.IsInf(g.CycleNs, 0) || math.IsNaN(g.CycleNs) || g.Load < 0 || math.IsInf(g.Load, 0) || math.IsNaN(g.Load) {
			t.Fatalf("ReadGauge() = %+v, want finite non-negative figures", g)
		}
		if g.CycleNs == 0 && g.Load != 0 {
			t.Fatalf("ReadGauge() = %+v: a load without a cycle length", g)
		}
	}
}

// TestGauge: the cycle length is the chain's extra time per extra cycle,
// the load the chase's time over the chain's, and a clock that did not
// advance gives nothing.
func TestGauge(t *testing.T) {
	for _, tc := range []struct {
		best [3]int64
		want Gauge
	}{
		{[3]int64{6000, 12000, 9000}, Gauge{CycleNs: 0.25, Load: 1.5}},
		{[3]int64{6000, 12000, 12000}, Gauge{CycleNs: 0.25, Load: 2}},
		{[3]int64{6000, 6000, 9000}, Gauge{}},
		{[3]int64{6000, 12000, 0}, Gauge{CycleNs: 0.25}},
	} {
		if got := gauge(tc.best); got != tc.want {
			t.Errorf("gauge(%v) = %+v, want %+v", tc.best, got, tc.want)
		}
	}
}

// TestChase: the chase visits every index of its buffer before it comes
// back (a cycle, not a short loop that would stay in the cache).
func TestChase(t *testing.T) {
	c := NewChase(4096, 7)
	seen := map[uint32]bool{}
	p := uint32(0)
	for range len(c.next) {
		if seen[p] {
			t.Fatalf("index %d visited twice within %d steps", p, len(c.next))
		}
		seen[p] = true
		p = c.next[p]
	}
	if p != 0 || len(seen) != 1024 {
		t.Errorf("after %d steps at %d, %d indexes seen: want back at 0 with 1024", len(c.next), p, len(seen))
	}
}

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
