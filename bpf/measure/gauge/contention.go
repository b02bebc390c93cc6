package gauge

import (
	"math"
	"slices"
	"sync"
)

// Contention collects the core's load (Reading.Load) after every call of a
// run, and judges which calls ran slower while something else took the
// core's caches or execution ports (Judge). One run keeps one, across its families: a
// contended state can last minutes, longer than a family measures, and
// only the run's fastest loads show what the core gives a thread that has
// it to itself. A nil *Contention flags no call. See
// docs/method.md#contention.
type Contention struct {
	mu sync.Mutex
	// loads[k] is every reading of reference k.
	loads [Refs][]float64
	// last is the latest load added.
	last Load
	// sorted caches the quantiles of loads while none was added.
	sorted [Refs][]float64
	// run is what the rows judged so far showed of each reference
	// (Keep).
	run evidence
}

// Judge says which of calls ran contended (judge), by the run's
// thresholds and what its earlier rows showed of each reference. A nil
// *Contention flags none.
func (c *Contention) Judge(calls []Call) Decision {
	if c == nil {
		return Decision{Contended: make([]bool, len(calls))}
	}
	th := c.Threshold()
	c.mu.Lock()
	run := c.run
	c.mu.Unlock()
	return judge(calls, th, run)
}

// Keep adds what a row's final verdict showed of each reference to the
// run's, for the rows judged after it: a reference that predicted the
// program's cost in one row has its say in a row too short to show it.
func (c *Contention) Keep(v Decision) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.run = c.run.plus(v.shown)
}

// contentionMargin is the least excess over the uncontended load at which
// a reference moved: a multiple of the loads' own spread when that is
// wider.
const contentionMargin = 0.02

// memoryMargin and memorySpreadTo are contentionMargin and the quantile
// the spread is taken to for the memory chase: its readings spread
// wider on a core the thread has to itself, since the cache it reaches
// is the socket's, which every tenant shares.
const (
	memoryMargin   = 0.05
	memorySpreadTo = 0.25
)

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

// Observe records the gauges' reading after a call and returns the
// call's load: the larger, per reference, of it and the reading before
// the call (the one observed last), since a contended stretch that ended
// before the gauge after the call, or began after the one before, still
// slowed it. A nil Contention records nothing and returns after.
func (c *Contention) Observe(after Load) Load {
	if c == nil {
		return after
	}
	c.mu.Lock()
	before := c.last
	c.mu.Unlock()
	c.Add(after)
	return before.Max(after)
}

// Threshold is, for each reference, the reading above which it moved in
// a call: the run's 2nd percentile of that reference's readings (a
// core the thread had to itself), plus contentionMargin of it or four
// times the spread from there to the 10th percentile, whichever is more
// (for the memory chase memoryMargin, and the spread to the 25th):
// about one standard deviation of the uncontended readings above their
// mean, as long as a tenth of the run's calls were uncontended. Low, since
// a move alone flags nothing: it need only catch the moves that come
// with a slower program. +Inf for a
// reference with fewer than minLoads readings. A reference that moved
// makes a call contended only where the program ran slower with it
// (Judge).
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
		margin, spreadTo := contentionMargin, 0.10
		if k == Memory {
			margin, spreadTo = memoryMargin, memorySpreadTo
		}
		th[k] = low + math.Max(margin*low, 4*(q(spreadTo)-low))
	}
	return th
}
