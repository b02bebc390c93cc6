package measure

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestSizing(t *testing.T) {
	loop := Sizing{Min: 100_000, Max: 1 << 26, CallTime: 4 * time.Millisecond}
	frames := Sizing{Min: 16640, Max: 1 << 26, CallTime: 4 * time.Millisecond}
	for _, tc := range []struct {
		sz   Sizing
		n    int
		ns   float64
		want uint32
	}{
		{loop, 1, 5, 100_000},       // never too short
		{loop, 1e9, 5, 800_000},     // fill the call time
		{loop, 500_000, 5, 500_000}, // no more than asked
		{Sizing{Min: 100_000, Max: 1 << 26, CallTime: time.Second}, 1e12, 0, 1 << 26}, // capped
		{loop, 1e9, 1000, 100_000}, // slow programs
		{frames, 100, 40, 16640},   // -benchtime 100x: the minimum
		{frames, 1e9, 40, 100_000}, // 4 ms at 40 ns per frame
	} {
		if got := tc.sz.Size(tc.n, tc.ns); got != tc.want {
			t.Errorf("%+v.Size(%d, %v) = %d, want %d", tc.sz, tc.n, tc.ns, got, tc.want)
		}
	}
}

func TestOrderRotates(t *testing.T) {
	for k := 1; k <= 4; k++ {
		pos := make([][]int, k) // pos[stream][position] count
		for s := range pos {
			pos[s] = make([]int, k)
		}
		for i := range k {
			o := Order(i, k)
			if got := slices.Sorted(slices.Values(o)); !slices.Equal(got, Order(0, k)) {
				t.Fatalf("Order(%d, %d) = %v: not every stream once", i, k, o)
			}
			for p, s := range o {
				pos[s][p]++
			}
		}
		for s := range pos {
			for p, n := range pos[s] {
				if n != 1 {
					t.Errorf("k=%d: stream %d in position %d %d times over %d rounds, want once", k, s, p, n, k)
				}
			}
		}
	}
}

// TestRunPairs runs two synthetic streams whose cost differs by a
// constant while the "machine" changes speed between rounds: the paired
// difference recovers the constant, the means do not see it alone.
func TestRunPairs(t *testing.T) {
	speed := []float64{1, 2, 1, 2, 2, 1}
	var calls int
	stream := func(cost, extra float64) Stream {
		return func(size uint32) (float64, error) {
			calls++ // both streams of a round see the same speed
			return cost*speed[((calls-1)/2)%len(speed)] + extra, nil
		}
	}
	sz := Sizing{Warm: 10, Min: 100, Max: 100, CallTime: time.Millisecond}
	reset := 0
	r, err := Run(600, sz, func() { reset++ }, stream(5, 0.3), stream(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.Count() != 6 || reset != 1 || calls != 2+12 {
		t.Fatalf("rounds %d, resets %d, calls %d: want 6 rounds after one warm-up each", r.Count(), reset, calls)
	}
	if d, ci := r.Paired(0, 1); math.Abs(d-0.3) > 1e-9 || !(ci >= 0) {
		t.Errorf("paired difference %v ± %v, want 0.3 exactly", d, ci)
	}
	if m := r.Mean(0); m < 5 {
		t.Errorf("mean %v: the speed changes should show in the mean", m)
	}
	m, half := meanCI95([]float64{1, 2, 3, 4, 5})
	// mean 3, sd sqrt(2.5), t(4, 0.975) = 2.7764
	if m != 3 || math.Abs(half-2.7764*math.Sqrt(2.5)/math.Sqrt(5)) > 1e-3 {
		t.Errorf("meanCI95 = %v ± %v, want 3 ± 1.963", m, half)
	}
	if _, half := meanCI95([]float64{7}); !math.IsInf(half, 1) {
		t.Errorf("one sample: half-width %v, want +Inf", half)
	}
}
