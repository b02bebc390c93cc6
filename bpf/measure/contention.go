package measure

import (
	"math"
	"slices"
	"sync"
)

// Contention collects the core's load (Gauge.Load) after every call of a
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

// maxContended is the largest share of a row's calls that may be
// contended for its figures to come from the others: past it, the row
// never saw the core uncontended, says so (contended-frac), and reports
// all its calls.
const maxContended = 0.9

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

// Uncontended is r with only the rounds' calls whose every stream's load
// was at most threshold (call i of each stream, so pairs stay pairs), and
// the share of calls left out. ok is false, and r is returned whole, when
// more than maxContended of them were contended, or none was not, or r
// has no loads.
func (r *Rounds) Uncontended(threshold float64) (u *Rounds, contended float64, ok bool) {
	n := r.Count()
	for s := range r.Ns {
		if s >= len(r.Load) || len(r.Load[s]) != n {
			return r, 0, false
		}
	}
	keep := make([]int, 0, n)
	for i := range n {
		clean := true
		for s := range r.Ns {
			clean = clean && r.Load[s][i] <= threshold
		}
		if clean {
			keep = append(keep, i)
		}
	}
	if n == 0 {
		return r, 0, false
	}
	contended = 1 - float64(len(keep))/float64(n)
	if contended > maxContended || len(keep) == 0 {
		return r, contended, false
	}
	if len(keep) == n {
		return r, 0, true
	}
	u = &Rounds{Size: r.Size, Turn: r.Turn, Elapsed: r.Elapsed}
	pick := func(xs [][]float64) [][]float64 {
		out := make([][]float64, len(xs))
		for s, x := range xs {
			if len(x) != n {
				continue
			}
			for _, i := range keep {
				out[s] = append(out[s], x[i])
			}
		}
		return out
	}
	u.Ns, u.CycleNs, u.Load = pick(r.Ns), pick(r.CycleNs), pick(r.Load)
	return u, contended, true
}
