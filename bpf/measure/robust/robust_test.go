package robust

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlockBootstrap: the interval of a median contains it, shrinks with
// more data, widens when the data come in long runs of one state (the
// dependence a single-value bootstrap would miss), and is the same for the
// same data.
func TestBlockBootstrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iid := make([]float64, 400)
	for i := range iid {
		iid[i] = rng.NormFloat64()
	}
	e := Median(iid, 1)
	if !e.Covers(e.Value) || !(e.Half() > 0) || e.Half() > 0.3 {
		t.Errorf("median of 400 normals %+v: want a small interval around it", e)
	}
	if small := Median(iid[:40], 1); !(small.Half() > e.Half()) {
		t.Errorf("40 values' interval %v not wider than 400 values' %v", small.Half(), e.Half())
	}
	// States of 50 rounds at -1 or +1: every block of about sqrt(n)
	// rounds is one state, so resampling blocks moves the median by a
	// whole state.
	runs := make([]float64, 400)
	for i := range runs {
		runs[i] = float64(2*((i/50)%2) - 1)
		runs[i] += 0.01 * rng.NormFloat64()
	}
	if d := Median(runs, 1); !(d.Half() > 0.5) {
		t.Errorf("median of long state runs %+v: the interval ignores the dependence", d)
	}
	if a, b := Median(iid, 1), Median(iid, 1); a != b {
		t.Errorf("same data, different intervals: %+v %+v", a, b)
	}
	if e := Median([]float64{1, 2}, 1); !math.IsInf(e.Half(), 1) {
		t.Errorf("two values: half-width %v, want +Inf", e.Half())
	}
}

// TestDense: on calls around one level Dense is their median; with up to
// half of them slowed by a quarter or more and nothing flagged, it stays
// within 1.5% of the quiet level, where the median follows the slow
// calls; and it takes the same data to the same figure.
func TestDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	quiet := make([]float64, 1000)
	for i := range quiet {
		quiet[i] = 100 * (1 + 0.015*rng.NormFloat64())
	}
	level := Quantile(quiet, 0.5)
	if d := Dense(quiet, 1).Value; math.Abs(d/level-1) > 0.005 {
		t.Errorf("quiet calls: Dense %v, median %v: want within 0.5%%", d, level)
	}
	for _, share := range []float64{0.1, 0.3, 0.45, 0.5} {
		slowed := append([]float64(nil), quiet...)
		for i := range slowed {
			if rng.Float64() < share {
				slowed[i] *= 1.25 + 0.6*rng.Float64()
			}
		}
		d := Dense(slowed, 1)
		if math.Abs(d.Value/level-1) > 0.015 {
			t.Errorf("%.0f%% of calls slowed: Dense %.2f, the quiet level %.2f: want within 1.5%%", 100*share, d.Value, level)
		}
		if !d.Covers(d.Value) {
			t.Errorf("%.0f%% slowed: interval %+v misses its value", 100*share, d)
		}
		if m := Quantile(slowed, 0.5); share >= 0.45 && m/level-1 < 0.015 {
			t.Errorf("%.0f%% slowed: the median moved only %.2f%%: the test shows nothing", 100*share, 100*(m/level-1))
		}
	}
	if a, b := Dense(quiet, 4), Dense(quiet, 4); a != b {
		t.Errorf("same data, different figures: %+v %+v", a, b)
	}
	if !math.IsNaN(Dense(nil, 1).Value) {
		t.Error("no calls: want NaN")
	}
}
