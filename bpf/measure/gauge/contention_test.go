package gauge

import (
	"math"
	"testing"
)

// TestThreshold: each reference's threshold sits above the run's lowest
// readings and below its contended ones, whatever their
// level; it marks nothing moved before there are readings enough to judge
// from, nor with no record at all.
func TestThreshold(t *testing.T) {
	inf := Load{math.Inf(1), math.Inf(1), math.Inf(1)}
	var none *Contention
	if th := none.Threshold(); th != inf {
		t.Errorf("nil Contention: threshold %v, want +Inf", th)
	}
	if l := none.Observe(Load{1, 2}); l != (Load{1, 2}) {
		t.Errorf("nil Contention: observed load %v, want the reading after", l)
	}
	c := new(Contention)
	for range minLoads - 1 {
		c.Add(Load{1, 1})
	}
	c.Add(Load{}) // no gauge: not a load
	if th := c.Threshold(); th != inf {
		t.Errorf("threshold %v from %d loads, want +Inf", th, minLoads-1)
	}
	for _, level := range []float64{0.7, 1, 2.5} {
		c := new(Contention)
		for i := range 1000 {
			l := Load{Caches: level * (1 + 0.01*float64(i%4)), Ports: 2 * level} // a 3% spread
			switch i % 6 {
			case 0:
				l[Caches] *= 1.3 // a sixth with the caches taken
			case 3:
				l[Ports] *= 1.3 // a sixth with the ports taken
			}
			c.Add(l)
		}
		c.Add(Load{}) // no gauge: not a load
		if l := c.Observe(Load{Ports: 0.5}); l != (Load{Ports: 0.5}) {
			t.Errorf("observed load %v after a zero reading, want the reading after alone", l)
		}
		if l := c.Observe(Load{Caches: 0.5}); l != (Load{0.5, 0.5}) {
			t.Errorf("observed load %v, want the larger of the readings before and after", l)
		}
		th := c.Threshold()
		if th[Caches] <= level || th[Caches] >= level*1.3 {
			t.Errorf("level %v: caches' threshold %v, want between the lowest %v and the contended %v", level, th[Caches], level, level*1.3)
		}
		if th[Ports] < 2*level || th[Ports] >= 2*level*1.3 {
			t.Errorf("level %v: ports' threshold %v, want between the uncontended %v and the contended %v", level, th[Ports], 2*level, 2*level*1.3)
		}
	}
}

// TestLoadMax: the larger reading of each reference.
func TestLoadMax(t *testing.T) {
	if got, want := (Load{1, 3}).Max(Load{2, 1}), (Load{2, 3}); got != want {
		t.Errorf("Max = %v, want %v", got, want)
	}
}
