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
