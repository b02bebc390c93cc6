package measure

import (
	"math"
	"slices"
	"time"

	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/robust"
	"bpfbench/bpf/units"
)

// Uncontended is r with only the rounds none of whose calls the run's
// judge says ran contended (gauge.Contention.Judge; call i of each
// stream, so pairs stay pairs), the judge's verdict, and the share of
// rounds left out. ok is false when more than units.MaxContended of them were
// contended. r is returned whole, with ok false, when it has no loads, and
// whole when the judge left out every round: nothing of it was free.
func (r *Rounds) Uncontended(c *gauge.Contention) (u *Rounds, v gauge.Decision, contended float64, ok bool) {
	n := r.Count()
	if n == 0 {
		return r, v, 0, false
	}
	for s := range r.Ns {
		if s >= len(r.Load) || len(r.Load[s]) != n {
			return r, v, 0, false
		}
	}
	v = c.Judge(r.calls())
	keep := make([]int, 0, n)
	for i := range n {
		clean := true
		for s := range r.Ns {
			clean = clean && !v.Contended[s*n+i]
		}
		if clean {
			keep = append(keep, i)
		}
	}
	contended = 1 - float64(len(keep))/float64(n)
	ok = contended <= units.MaxContended
	switch len(keep) {
	case 0, n:
		return r, v, contended, ok
	}
	return r.only(keep), v, contended, ok
}

// calls is every stream's calls as the judge takes them, stream by
// stream: the cost of a unit in cycles of the rate the call ran at, or
// of the stream's median rate for a call whose chain saw no clock.
func (r *Rounds) calls() []gauge.Call {
	n := r.Count()
	calls := make([]gauge.Call, 0, n*len(r.Ns))
	for s := range r.Ns {
		cys := r.cycleNs(s)
		med := 1 / r.GHz(s)
		for i, ns := range r.Ns[s] {
			cost := ns
			switch {
			case cys != nil && cys[i] > 0:
				cost = ns / cys[i]
			case med > 0:
				cost = ns / med
			}
			calls = append(calls, gauge.Call{Stream: s, Cost: cost, Load: r.Load[s][i]})
		}
	}
	return calls
}

// only is r with only the calls keep of each stream.
func (r *Rounds) only(keep []int) *Rounds {
	n := r.Count()
	u := &Rounds{Size: r.Size, Turn: r.Turn, Elapsed: r.Elapsed}
	u.Ns, u.CycleNs, u.Load = pick(r.Ns, keep, n), pick(r.CycleNs, keep, n), pick(r.Load, keep, n)
	u.Layout = pick(r.Layout, keep, n)
	return u
}

// pick is each stream's calls keep of xs (none of a stream that has not
// all n calls: cycle lengths where none were timed).
func pick[T any](xs [][]T, keep []int, n int) [][]T {
	out := make([][]T, len(xs))
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

// Cycles is stream s's cost per unit in cycles: each call's cost over the
// cycle length measured right after it, the median over the calls that
// have one (a chain whose clock did not advance has none). NaN when none
// has (see sizing.Cycles and gauge.Reading).
//
// The densest part's median (robust.Dense), not Location's low quantile:
// a time's errors only add (the low quantile finds the calls nothing
// slowed), but a call's cycles err both ways, since the host often
// changes the clock rate between a call and its chain, so the low tail is
// made of calls whose chain ran slower than they did
// (docs/method.md#the-clock-rate-cyclesop). Nor the plain median, which
// follows the calls a neighbour slowed unseen (docs/method.md#dense).
//
// Over several layouts, each layout's densest part apart, averaged
// (robust.DenseAcross): a load keeps a level of its own, and the densest
// part of them all would take one load's level or another's as their
// shares fell (docs/method.md#layout-where-the-jit-put-the-code).
func (r *Rounds) Cycles(s int) robust.Estimate {
	var c []float64
	var layouts []int
	lay := s < len(r.Layout) && len(r.Layout[s]) == r.Count()
	for i, cy := range r.cycleNs(s) {
		if cy > 0 {
			c = append(c, r.Ns[s][i]/cy)
			if lay {
				layouts = append(layouts, r.Layout[s][i])
			}
		}
	}
	if lay && len(slices.Compact(slices.Sorted(slices.Values(layouts)))) > 1 {
		return robust.DenseAcross(c, layouts, r.Turn)
	}
	return robust.Dense(c, r.Turn)
}

// GHz is the median clock rate stream s ran at (1/CycleNs), NaN without
// one.
func (r *Rounds) GHz(s int) float64 {
	var cys []float64
	for _, cy := range r.cycleNs(s) {
		if cy > 0 {
			cys = append(cys, cy)
		}
	}
	return 1 / robust.Quantile(cys, 0.5) // NaN for none
}

// Reference is the median reading of reference k (gauge.Caches, Ports or
// Memory) after stream s's calls, NaN unless every call has one.
func (r *Rounds) Reference(s, k int) float64 {
	if s >= len(r.Load) || len(r.Load[s]) != r.Count() {
		return math.NaN()
	}
	var v []float64
	for _, l := range r.Load[s] {
		if l[k] > 0 {
			v = append(v, l[k])
		}
	}
	return robust.Quantile(v, 0.5) // NaN for none
}

// cycleNs is stream s's cycle lengths, nil unless every call has one.
func (r *Rounds) cycleNs(s int) []float64 {
	if s >= len(r.CycleNs) || len(r.CycleNs[s]) != r.Count() {
		return nil
	}
	return r.CycleNs[s]
}

// Rounds are the samples of streams measured in alternating rounds.
type Rounds struct {
	// Size is the units of every measured call.
	Size uint32
	// Turn is the calls each stream makes in a row in a round
	// (sizing.MaxTurn).
	Turn int
	// Ns[s][i] is stream s's cost per unit in its call i: call i%Turn
	// of its turn in round i/Turn.
	Ns [][]float64
	// CycleNs[s][i] is the cycle length measured right after stream s's
	// call i (gauge.Reading.CycleNs; with sizing.Cycles): a host changes its clock rate
	// every few tens of ms, a call takes a few ms.
	CycleNs [][]float64
	// Layout[s][i] is the layout stream s's call i measured (sizing.Layout),
	// none where the loops have one.
	Layout [][]int
	// Load[s][i] is the core's load measured around stream s's call i
	// (gauge.Reading.Load; with sizing.Cycles).
	Load [][]gauge.Load
	// Elapsed is the wall time of the measured rounds.
	Elapsed time.Duration
}

// Count is the number of each stream's calls: rounds times Turn.
func (r *Rounds) Count() int { return len(r.Ns[0]) }

// Location is stream s's cost per unit: the robust.LowQuantile of its calls,
// with a 95% interval that holds for dependent rounds.
func (r *Rounds) Location(s int) robust.Estimate { return robust.Low(r.Ns[s], r.Turn) }

// Paired is the median per-call difference a - b (call i of a's turn
// less call i of b's in the same round), with a 95% interval from a block
// bootstrap over the calls.
func (r *Rounds) Paired(a, b int) robust.Estimate {
	return r.perRound(a, b, func(x, y float64) float64 { return x - y })
}

// Relative is the median per-round difference a - b as a fraction of b in
// the same round: it cancels the machine's speed level, which an absolute
// difference scales with.
func (r *Rounds) Relative(a, b int) robust.Estimate {
	return r.perRound(a, b, func(x, y float64) float64 { return (x - y) / y })
}

// perRound is the median of f over the rounds' pairs of streams a and b.
func (r *Rounds) perRound(a, b int, f func(x, y float64) float64) robust.Estimate {
	d := make([]float64, r.Count())
	for i := range d {
		d[i] = f(r.Ns[a][i], r.Ns[b][i])
	}
	return robust.Median(d, r.Turn)
}

// clean is r's uncontended calls (Uncontended) and how many were left
// out. The verdict is final: what it showed of each reference goes to
// the run's record, for the rows judged after.
func (r *Rounds) clean(c *gauge.Contention) (*Rounds, Contended) {
	u, v, contended, ok := r.Uncontended(c)
	c.Keep(v)
	n := r.Count()
	return u, Contended{Frac: contended, TooFewFree: !ok, Calls: n,
		Measured: n > 0 && len(r.Load) > 0 && len(r.Load[0]) == n}
}
