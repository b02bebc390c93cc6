package gauge

import (
	"math"
	"slices"
	"sync"
)

// Contention collects the core's load (Reading.Load) after every call of a
// run, and says which calls ran while something else took the core's
// caches or execution ports. One run keeps one, across its families: a
// contended state can last minutes, longer than a family measures, and
// only the run's fastest loads show what the core gives a thread that has
// it to itself. A nil *Contention flags no call. See
// docs/method.md#contention.
type Contention struct {
	mu sync.Mutex
	// loads[k] is every reading of reference k.
	loads [refs][]float64
	// last is the latest load added.
	last Load
	// sorted caches the quantiles of loads while none was added.
	sorted [refs][]float64
}

// contentionMargin is the least excess over the uncontended load that
// flags a call: a multiple of the loads' own spread when that is wider.
const contentionMargin = 0.05

// minLoads is the fewest readings of a reference Threshold judges from.
const minLoads = 50

// Add records a call's load. The rounds engine adds every call's; a
// reference that read zero has no reading.
func (c *Contention) Add(load Load) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range load {
		if v > 0 {
			c.loads[k] = append(c.loads[k], v)
			c.sorted[k] = nil
		}
	}
	c.last = load
}

// Last is the latest load added (zero for none, or a nil Contention).
func (c *Contention) Last() Load {
	if c == nil {
		return Load{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Threshold is, for each reference, the reading above which a call counts
// as contended: the run's 2nd percentile of that reference's readings (a
// core the thread had to itself), plus contentionMargin of it or six
// times the spread from there to the 10th percentile, whichever is more:
// about 2.5 standard deviations of the uncontended readings above their
// mean, as long as a tenth of the run's calls were uncontended. +Inf for a
// reference with fewer than minLoads readings. A call is contended when
// any of its references is over its threshold (Load.Within).
func (c *Contention) Threshold() Load {
	th := Load{}
	for k := range th {
		th[k] = math.Inf(1)
	}
	if c == nil {
		return th
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, loads := range c.loads {
		if len(loads) < minLoads {
			continue
		}
		if c.sorted[k] == nil {
			c.sorted[k] = slices.Sorted(slices.Values(loads))
		}
		s := c.sorted[k]
		q := func(p float64) float64 { return s[int(p*float64(len(s)-1))] }
		low := q(0.02)
		th[k] = low + math.Max(contentionMargin*low, 6*(q(0.10)-low))
	}
	return th
}
