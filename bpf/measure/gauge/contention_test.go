package gauge

import (
	"math"
	"testing"
)

// TestThreshold: the threshold sits above the run's uncontended loads and
// below its contended ones, whatever their level; it flags nothing before
// there are loads enough to judge from, nor with no record at all.
func TestThreshold(t *testing.T) {
	var none *Contention
	if th := none.Threshold(); !math.IsInf(th, 1) {
		t.Errorf("nil Contention: threshold %v, want +Inf", th)
	}
	if none.Last() != 0 {
		t.Errorf("nil Contention: last load %v, want 0", none.Last())
	}
	c := new(Contention)
	for range minLoads - 1 {
		c.Add(1)
	}
	c.Add(0) // no gauge: not a load
	if c.Last() != 1 {
		t.Errorf("last load %v, want 1 (a zero is no load)", c.Last())
	}
	if th := c.Threshold(); !math.IsInf(th, 1) {
		t.Errorf("threshold %v from %d loads, want +Inf", th, minLoads-1)
	}
	for _, level := range []float64{0.7, 1, 2.5} {
		c := new(Contention)
		for i := range 1000 {
			load := level * (1 + 0.01*float64(i%4)) // a 3% spread
			if i%3 == 0 {
				load *= 1.3 // a third contended
			}
			c.Add(load)
		}
		c.Add(0) // no gauge: not a load
		th := c.Threshold()
		if th <= level*1.03 || th >= level*1.3 {
			t.Errorf("level %v: threshold %v, want between the uncontended %v and the contended %v", level, th, level*1.03, level*1.3)
		}
	}
}
