package stat

import (
	"math"
	"testing"
	"time"
)

// The exact null distribution of the Mann-Whitney U statistic, against
// published critical values (two-sided, alpha 0.05: reject when U <= c).
func TestUCritical(t *testing.T) {
	for _, c := range []struct{ n, m, crit int }{
		{4, 4, 0}, {5, 5, 2}, {6, 6, 5}, {8, 8, 13}, {10, 10, 23}, {10, 6, 11}, {20, 20, 127},
	} {
		k, level := uCritical(c.n, c.m, 0.05)
		if k != c.crit+1 || level < 0.95 {
			t.Errorf("uCritical(%d, %d) = %d at level %.4f, want %d at >= 0.95", c.n, c.m, k, level, c.crit+1)
		}
	}
	if k, _ := uCritical(3, 3, 0.05); k != 0 {
		t.Errorf("uCritical(3, 3) = %d, want 0: no 95%% interval from 3+3 runs", k)
	}
	var total float64
	for _, c := range uCounts(7, 5) {
		total += c
	}
	if total != 792 { // C(12, 5)
		t.Errorf("uCounts(7, 5) sums to %g, want 792", total)
	}
}

func TestShift(t *testing.T) {
	b := []float64{5.1, 5.3, 5.0, 5.4, 5.2, 5.6, 5.5, 5.3, 5.1, 5.2}
	a := make([]float64, len(b))
	for i, x := range b {
		a[(i+3)%len(b)] = x + 2
	}
	e := Shift(a, b, nil, nil)
	if math.Abs(e.Center-2) > 1e-9 || !(e.Lo <= 2 && 2 <= e.Hi) || !(e.Lo > 1.5 && e.Hi < 2.5) {
		t.Errorf("Shift of a sample moved by 2: %+v", e)
	}
	if e := Shift([]float64{3}, []float64{1}, []float64{0.3}, []float64{0.4}); e.Center != 2 || math.Abs(e.Hi-2.5) > 1e-9 {
		t.Errorf("Shift of single runs with their CIs: %+v, want 2 +- 0.5", e)
	}
	if e := Shift([]float64{3}, []float64{1}, nil, nil); e.Finite() {
		t.Errorf("Shift of single runs without CIs has an interval: %+v", e)
	}
}

// TestShiftManyRuns: thousands of runs a side (a file of many passes)
// are estimated at once, not by tabulating the U distribution of 10^7
// pairs (which would take minutes and gigabytes).
func TestShiftManyRuns(t *testing.T) {
	a, b := make([]float64, 3000), make([]float64, 3000)
	for i := range a {
		a[i], b[i] = 10+float64(i%7)/10, 8+float64(i%5)/10
	}
	done := make(chan Estimate)
	go func() { done <- Shift(a, b, nil, nil) }()
	select {
	case e := <-done:
		if !(e.Lo < e.Center && e.Center < e.Hi) || math.Abs(e.Center-2.1) > 0.1 || e.Caveat != "" {
			t.Errorf("Shift of 3000 vs 3000 runs: %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shift of 3000 vs 3000 runs did not return in 10 s")
	}
}

func TestSummarize(t *testing.T) {
	xs := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	e := Summarize(xs, nil)
	// benchstat's median interval for 10 runs: the 2nd and 9th smallest.
	if e.Center != 5.5 || e.Lo != 2 || e.Hi != 9 {
		t.Errorf("Summarize of 1..10 = %+v, want 5.5 in [2, 9]", e)
	}
	if xs[0] != 9 {
		t.Error("Summarize reordered its argument")
	}
	if e := Summarize([]float64{4}, []float64{0.5}); e.Lo != 3.5 || e.Hi != 4.5 {
		t.Errorf("one run with its CI: %+v", e)
	}
}
