package measure

import (
	"math"
	"testing"

	"bpfbench/bpf/measure/gauge"
)

// contendedRounds are rounds of two streams whose calls cost 5 and 7 ns
// on a free core and twice that on a contended one, in the calls of
// contended: a load of 2, not 1, on one reference, the caches in even
// calls and the ports in odd ones.
func contendedRounds(n int, contended func(i int) bool) *Rounds {
	r := &Rounds{Turn: 1, Ns: make([][]float64, 2), CycleNs: make([][]float64, 2), Load: make([][]gauge.Load, 2)}
	for i := range n {
		f, load := 1.0, gauge.Load{1, 1}
		if contended(i) {
			f = 2
			load[i%2] = 2
		}
		for s, ns := range []float64{5, 7} {
			r.Ns[s] = append(r.Ns[s], ns*f)
			r.CycleNs[s] = append(r.CycleNs[s], 0.25)
			r.Load[s] = append(r.Load[s], load)
		}
	}
	return r
}

// recorded is a run's record of r's loads, every call's, as the rounds
// engine adds them.
func recorded(rs ...*Rounds) *gauge.Contention {
	c := new(gauge.Contention)
	for _, r := range rs {
		for _, loads := range r.Load {
			for _, l := range loads {
				c.Add(l)
			}
		}
	}
	return c
}

// TestUncontended: the figures come from the calls the judge kept, and
// leave out those that ran slower with a reference that moved, whichever
// reference it was; pairs stay pairs;
// a row with too few free calls says so and reports theirs.
func TestUncontended(t *testing.T) {
	r := contendedRounds(100, func(i int) bool { return i%5 < 3 }) // 60% contended
	c := recorded(r)
	u, _, frac, ok := r.Uncontended(c)
	if !ok || math.Abs(frac-0.6) > 1e-9 || u.Count() != 40 {
		t.Fatalf("Uncontended: %d calls, contended %v, ok %v; want 40, 0.6, true", u.Count(), frac, ok)
	}
	if loc, d, cy := u.Location(0).Value, u.Paired(0, 1).Value, u.Cycles(1).Value; loc != 5 || d != -2 || cy != 28 {
		t.Errorf("uncontended figures: ns %v, paired %v, cycles %v; want 5, -2, 28", loc, d, cy)
	}
	if d := r.Paired(0, 1).Value; d != -4 {
		t.Errorf("all calls' paired difference %v, want -4 (the contended majority): the test does not test", d)
	}
	// A row contended in one stream only loses those pairs too.
	r.Ns[1][3] = 7 // call 3 of stream 0 still slower, stream 1's free
	if u, _, _, _ := r.Uncontended(c); u.Count() != 40 {
		t.Errorf("%d calls kept with one stream's call 3 contended, want 40", u.Count())
	}
	// A reference that moved while the program did not flags nothing.
	moved := contendedRounds(100, func(int) bool { return false })
	for s := range moved.Load {
		for i := range moved.Load[s] {
			if i%3 == 0 {
				moved.Load[s][i][gauge.Ports] = 2
			}
		}
	}
	if u, _, frac, ok := moved.Uncontended(recorded(moved)); !ok || frac != 0 || u != moved {
		t.Errorf("the ports moved alone: contended %v, ok %v, same rounds %v; want 0, true, true", frac, ok, u == moved)
	}
	// Past units.MaxContended the figures come from the few free calls.
	most := contendedRounds(200, func(i int) bool { return i%20 != 0 }) // 95%
	u, _, frac, ok = most.Uncontended(recorded(most))
	if ok || frac != 0.95 || u.Count() != 10 {
		t.Fatalf("95%% contended: ok %v, contended %v, %d calls kept; want false, 0.95, 10", ok, frac, u.Count())
	}
	if loc := u.Location(0).Value; loc != 5 {
		t.Errorf("95%% contended: ns %v, want the free calls' 5", loc)
	}
	free := contendedRounds(100, func(int) bool { return false })
	if u, _, frac, ok := free.Uncontended(recorded(free)); !ok || u != free || frac != 0 {
		t.Errorf("free core: ok %v, contended %v, same rounds %v", ok, frac, u == free)
	}
	// A smoke run's two calls show nothing of any reference.
	two := contendedRounds(2, func(i int) bool { return i == 0 })
	if _, _, frac, ok := two.Uncontended(recorded(two)); !ok || frac != 0 {
		t.Errorf("two calls: ok %v, contended %v; want true, 0", ok, frac)
	}
	if _, _, frac, ok := r.Uncontended(nil); !ok || frac != 0 {
		t.Errorf("no record: ok %v, contended %v", ok, frac)
	}
	free.Load = nil
	if _, _, _, ok := free.Uncontended(c); ok {
		t.Error("rounds without loads judged uncontended")
	}
}

// TestRunLeavesOutContention: the calls a gauge saw contended (and the
// call after them: the gauge before it was contended) are left out of the
// figure, which is the free core's.
func TestRunLeavesOutContention(t *testing.T) {
	calls := 0
	contended := func() bool { return calls > 20 && calls <= 70 }
	stream := func(size uint32) (float64, error) {
		calls++
		if contended() {
			return 10, nil
		}
		return 5, nil
	}
	c := new(gauge.Contention)
	sz := sizing{Warm: 1, Min: 10, Max: 10, Cycles: true, Contention: c, Gauge: func() gauge.Reading {
		if contended() {
			return gauge.Reading{CycleNs: 0.25, Load: gauge.Load{1, 2}}
		}
		return gauge.Reading{CycleNs: 0.25, Load: gauge.Load{1, 1}}
	}}
	r, err := run(Budget{Units: 1000}, sz, nil, stream)
	if err != nil {
		t.Fatal(err)
	}
	u, _, frac, ok := r.Uncontended(c)
	// Calls 21-70 of the stream (the first was the warm-up's); the one
	// after them was free, though the gauge before it was not.
	if want := 50.0 / 100; !ok || frac != want {
		t.Fatalf("contended %v, ok %v; want %v", frac, ok, want)
	}
	if c := u.Cycles(0).Value; c != 20 || u.Count() != 50 {
		t.Errorf("cycles %v from %d calls, want the free core's 20 from its 50 calls", c, u.Count())
	}
}
