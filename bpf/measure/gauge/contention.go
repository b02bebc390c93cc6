package gauge

import (
	"math"
	"slices"
	"sync"
)

// Contention collects the core's load (Reading.Load) after every call of a
// run, and says which calls ran while something else took the core's
// throughput. One run keeps one, across its families: a contended state
// can last minutes, longer than a family measures, and only the run's
// fastest loads show what the core gives a thread that has it to itself.
// A nil *Contention flags no call. See docs/method.md#contention.
type Contention struct {
	mu    sync.Mutex
	loads []float64
	// last is the latest load added.
	last float64
	// sorted caches the quantiles of loads while none was added.
	sorted []float64
}

// contentionMargin is the least excess over the uncontended load that
// flags a call: a multiple of the loads' own spread when that is wider.
const contentionMargin = 0.05

// minLoads is the fewest loads Threshold judges from.
const minLoads = 50

// Add records a load. The rounds engine adds every call's.
func (c *Contention) Add(load float64) {
	if c == nil || !(load > 0) {
		return
	}
	c.mu.Lock()
	c.loads = append(c.loads, load)
	c.last = load
	c.sorted = nil
	c.mu.Unlock()
}

// Last is the latest load added (0 for none, or a nil Contention).
func (c *Contention) Last() float64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Threshold is the load above which a call counts as contended: the run's
// 2nd percentile of loads (a core the thread had to itself), plus
// contentionMargin of it or six times the spread from there to the 10th
// percentile, whichever is more: about 2.5 standard deviations of the
// uncontended loads above their mean, as long as a tenth of the run's
// calls were uncontended. +Inf before minLoads loads.
func (c *Contention) Threshold() float64 {
	if c == nil {
		return math.Inf(1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.loads) < minLoads {
		return math.Inf(1)
	}
	if c.sorted == nil {
		c.sorted = slices.Sorted(slices.Values(c.loads))
	}
	q := func(p float64) float64 { return c.sorted[int(p*float64(len(c.sorted)-1))] }
	low := q(0.02)
	return low + math.Max(contentionMargin*low, 6*(q(0.10)-low))
}
