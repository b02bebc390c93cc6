package measure

import (
	"math"
	"slices"
	"testing"
	"time"

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

// TestUncontended: the figures come from the calls made on a free core,
// whichever reference saw the contention, pairs stay pairs, and a row
// that never had enough of them says so and keeps its least contended
// tenth.
func TestUncontended(t *testing.T) {
	th := gauge.Load{1.5, 1.5}
	r := contendedRounds(100, func(i int) bool { return i%5 < 3 }) // 60% contended
	u, frac, ok := r.Uncontended(th)
	if !ok || math.Abs(frac-0.6) > 1e-9 || u.Count() != 40 {
		t.Fatalf("Uncontended: %d calls, contended %v, ok %v; want 40, 0.6, true", u.Count(), frac, ok)
	}
	if loc, d, c := u.Location(0).Value, u.Paired(0, 1).Value, u.Cycles(1).Value; loc != 5 || d != -2 || c != 28 {
		t.Errorf("uncontended figures: ns %v, paired %v, cycles %v; want 5, -2, 28", loc, d, c)
	}
	if d := r.Paired(0, 1).Value; d != -4 {
		t.Errorf("all calls' paired difference %v, want -4 (the contended majority): the test does not test", d)
	}
	// A row contended in one stream only loses those pairs too.
	r.Load[1][3] = gauge.Load{1, 1} // call 3 of stream 0 still contended
	if u, _, _ := r.Uncontended(th); u.Count() != 40 {
		t.Errorf("%d calls kept with one stream's call 3 contended, want 40", u.Count())
	}
	// Past maxContended the figures come from the least contended tenth:
	// the five free calls and the five least loaded of the others.
	all := contendedRounds(100, func(i int) bool { return i%20 != 0 })  // 95%
	all.Load[0][7][gauge.Ports], all.Load[1][7][gauge.Ports] = 1.6, 1.6 // the least loaded of the contended
	u, frac, ok = all.Uncontended(th)
	if ok || frac != 0.95 || u.Count() != 10 || !slices.Contains(u.Load[0], all.Load[0][7]) {
		t.Fatalf("95%% contended: ok %v, contended %v, %d calls kept, call 7 among them %v; want false, 0.95, 10, true", ok, frac, u.Count(), slices.Contains(u.Load[0], all.Load[0][7]))
	}
	if loc := u.Location(0).Value; loc != 5 {
		t.Errorf("95%% contended: ns %v, want the free calls' 5", loc)
	}
	free := contendedRounds(10, func(int) bool { return false })
	if u, frac, ok := free.Uncontended(th); !ok || u != free || frac != 0 {
		t.Errorf("free core: ok %v, contended %v, same rounds %v", ok, frac, u == free)
	}
	one := contendedRounds(2, func(i int) bool { return i == 0 }) // a smoke run's
	if u, frac, ok := one.Uncontended(th); !ok || frac != 0.5 || u.Count() != 1 {
		t.Errorf("one of two calls contended: ok %v, contended %v, %d calls kept; want true, 0.5, 1", ok, frac, u.Count())
	}
	if _, frac, ok := free.Uncontended(gauge.Load{math.Inf(1), math.Inf(1)}); !ok || frac != 0 {
		t.Errorf("no threshold: ok %v, contended %v", ok, frac)
	}
	free.Load = nil
	if _, _, ok := free.Uncontended(th); ok {
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
	u, frac, ok := r.Uncontended(c.Threshold())
	// Calls 21-70 of the stream (the first was the warm-up's) and the one
	// after them.
	if want := 51.0 / 100; !ok || frac != want {
		t.Fatalf("contended %v, ok %v; want %v", frac, ok, want)
	}
	if c, all := u.Cycles(0).Value, r.Cycles(0).Value; c != 20 || all != 30 {
		t.Errorf("cycles %v, want the free core's 20 (all calls': %v, want 30, half of them 40)", c, all)
	}
}

// TestStopRuleWaitsOutContention: a runner whose calls were mostly
// contended measures on past its budget until half of it is uncontended,
// and stops at maxStretch times it whatever the core does.
func TestStopRuleWaitsOutContention(t *testing.T) {
	c := new(gauge.Contention)
	for i := range 100 {
		c.Add(gauge.Load{1 + float64(i%2), 1}) // half of the run's loads contended
	}
	budget := Budget{Time: time.Second}
	runner := func(elapsed time.Duration, contendedShare float64) *runner {
		r := contendedRounds(100, func(i int) bool { return float64(i) < contendedShare*100 })
		r.Elapsed = elapsed
		return &runner{budget: budget, sz: sizing{Contention: c}, r: r, i: 100, block: 1}
	}
	for _, tc := range []struct {
		elapsed   time.Duration
		contended float64
		done      bool
	}{
		{900 * time.Millisecond, 0, false},     // under budget
		{time.Second, 0, true},                 // budget, uncontended
		{time.Second, 0.8, false},              // 0.2 s of uncontended calls
		{1200 * time.Millisecond, 0.6, false},  // 0.48 s
		{1300 * time.Millisecond, 0.6, true},   // 0.52 s: half the budget
		{1500 * time.Millisecond, 0.95, false}, // still waiting
		{maxStretch * time.Second, 1.0, true},  // never uncontended: the stretch ends
	} {
		if got := runner(tc.elapsed, tc.contended).done(); got != tc.done {
			t.Errorf("after %v with %.0f%% contended: done %v, want %v", tc.elapsed, 100*tc.contended, got, tc.done)
		}
	}
}
