package gauge

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// Rule names the judge's rule in a run's configuration: a call is
// contended when it ran slower with a reference that moved.
const Rule = "slower-with-reference"

// A Call is what the judge knows of one call of a stream: the program's
// cost per unit, and the core's load around the call.
type Call struct {
	// Stream is the call's stream: each stream's costs are compared
	// only with its own.
	Stream int
	// Cost is the cost of one unit, in cycles where the clock rate was
	// timed (a neighbour moves the program's cycles, not the clock's).
	Cost float64
	// Load is the larger of the gauges on either side of the call.
	Load Load
}

// A Verdict is what the judge decided of a set of calls.
type Verdict struct {
	// Contended[i] says call i ran slower with a reference that moved.
	Contended []bool
	// Say says which references predicted the program's cost in these
	// calls (with the run's earlier rows): only those flag a call.
	Say [refs]bool
	// Unjudged counts the calls of streams with fewer than minFree calls
	// on which no reference moved, which show no free cost to compare
	// with: they count as contended where a reference with a say moved
	// (nothing shows they ran free).
	Unjudged int
	// shown is what these calls showed of each reference, which
	// Contention.Keep adds to the run's.
	shown evidence
}

// evidence is what calls showed of each reference: all its moved calls
// against the free ones (moved), and those on which no other reference
// with a say moved (alone).
type evidence struct{ moved, alone [refs]tally }

func (e evidence) plus(f evidence) evidence {
	for k := range e.moved {
		e.moved[k] = e.moved[k].plus(f.moved[k])
		e.alone[k] = e.alone[k].plus(f.alone[k])
	}
	return e
}

// judge says which calls ran contended: slower than their stream runs on
// a free core, with a reference over its threshold th[k] that predicts
// the program's cost in these calls and the run's earlier ones (run).
//
// A call is free when no reference moved; a stream's free cost is its
// free calls' 25th percentile, and a call of it is slow when it exceeds
// that by slowMargin, or by three times the free calls' spread down to
// their 5th percentile, whichever is more (a quarter of a stream's free
// calls may be slow without moving it). A reference has its say when
// the calls it marks as moved are slow at least sayRatio times as often
// as the free calls, and surely so (a one-sided test of the two shares
// at sayZ standard errors), and still does on its own: a reference that
// moves whenever one with a say does, and not otherwise with the
// program, loses it. A reference that moves while the program does not
// flags nothing, and a program that runs slower while no reference moves
// is not contended: the estimators keep to its fast calls. The calls
// flagged are the slow ones on which a reference with a say moved, slow
// now against the calls on which none with a say did. See
// docs/method.md#the-judge.
func judge(calls []Call, th Load, run evidence) Verdict {
	v := Verdict{Contended: make([]bool, len(calls))}
	var moved [refs][]bool
	free := make([]bool, len(calls))
	for i, c := range calls {
		free[i] = true
		for k := range th {
			if moved[k] == nil {
				moved[k] = make([]bool, len(calls))
			}
			moved[k][i] = c.Load[k] > th[k] // +Inf: never
			free[i] = free[i] && !moved[k][i]
		}
	}
	limit, judged := slowLimits(calls, free)
	slow := make([]bool, len(calls))
	for i, c := range calls {
		slow[i] = judged[c.Stream] && c.Cost > limit[c.Stream]
	}
	// alone says whether k is the only reference of others (and k) that
	// moved in call i.
	alone := func(k, i int, others [refs]bool) bool {
		for j := range others {
			if others[j] && j != k && moved[j][i] {
				return false
			}
		}
		return true
	}
	// count tallies reference k's moved calls on which none of the
	// references in others moved, against the free calls.
	count := func(k int, others [refs]bool) tally {
		var t tally
		for i, c := range calls {
			switch {
			case !judged[c.Stream]:
			case free[i]:
				t.add(false, slow[i])
			case moved[k][i] && alone(k, i, others):
				t.add(true, slow[i])
			}
		}
		return t
	}
	for k := range th {
		v.shown.moved[k] = count(k, [refs]bool{})
		v.Say[k] = v.shown.moved[k].plus(run.moved[k]).says()
	}
	say := v.Say
	for k := range th {
		if !v.Say[k] {
			continue
		}
		v.shown.alone[k] = count(k, say)
		if a := v.shown.alone[k].plus(run.alone[k]); a.moved >= minAlone && !a.says() {
			v.Say[k] = false
		}
	}
	// The calls to compare with are now those on which no reference
	// with a say moved: one that moves whatever the program does no
	// longer narrows them.
	for i := range calls {
		free[i] = true
		for k := range th {
			free[i] = free[i] && !(v.Say[k] && moved[k][i])
		}
	}
	limit, judged = slowLimits(calls, free)
	for i, c := range calls {
		for k := range th {
			if !v.Say[k] || !moved[k][i] {
				continue
			}
			if !judged[c.Stream] {
				v.Unjudged++
				v.Contended[i] = true
				break
			}
			if c.Cost > limit[c.Stream] {
				v.Contended[i] = true
				break
			}
		}
	}
	return v
}

// slowLimits is, for each stream, the cost above which a call of it is
// slow, judged from its free calls; judged is false for a stream with
// fewer than minFree of them.
func slowLimits(calls []Call, free []bool) (limit []float64, judged []bool) {
	var costs [][]float64
	for i, c := range calls {
		for len(costs) <= c.Stream {
			costs = append(costs, nil)
		}
		if free[i] {
			costs[c.Stream] = append(costs[c.Stream], c.Cost)
		}
	}
	limit, judged = make([]float64, len(costs)), make([]bool, len(costs))
	for s, xs := range costs {
		if len(xs) < minFree {
			continue
		}
		slices.Sort(xs)
		sample := stats.Sample{Xs: xs, Sorted: true}
		cost, low := sample.Quantile(0.25), sample.Quantile(0.05)
		limit[s] = cost + math.Max(slowMargin*cost, 3*(cost-low))
		judged[s] = true
	}
	return limit, judged
}

const (
	// slowMargin is the least excess over a stream's free cost that
	// makes a call slow.
	slowMargin = 0.03
	// minFree is the fewest free calls of a stream its free cost is
	// judged from.
	minFree = 10
	// sayRatio and sayZ are how much more often, and how surely, the
	// calls a reference marks as moved must be slow than the free ones
	// for it to have a say; minSlowMoved is the fewest slow moved calls
	// that give one.
	sayRatio     = 2
	sayZ         = 3.3
	minSlowMoved = 5
	// minAlone is the fewest calls on which a reference moved alone that
	// can take its say away.
	minAlone = 50
)

// tally counts the moved and the free calls, and how many of each were
// slow.
type tally struct{ moved, movedSlow, free, freeSlow int }

func (t tally) plus(u tally) tally {
	return tally{t.moved + u.moved, t.movedSlow + u.movedSlow, t.free + u.free, t.freeSlow + u.freeSlow}
}

func (t *tally) add(moved, slow bool) {
	if moved {
		t.moved++
		if slow {
			t.movedSlow++
		}
	} else {
		t.free++
		if slow {
			t.freeSlow++
		}
	}
}

// says is whether the moved calls were slow sayRatio times as often as
// the free ones, at sayZ standard errors of the difference of the two
// shares.
func (t tally) says() bool {
	if t.movedSlow < minSlowMoved || t.free == 0 {
		return false
	}
	pm := float64(t.movedSlow) / float64(t.moved)
	pf := float64(t.freeSlow) / float64(t.free)
	if pm < sayRatio*pf {
		return false
	}
	p := float64(t.movedSlow+t.freeSlow) / float64(t.moved+t.free)
	se := math.Sqrt(p * (1 - p) * (1/float64(t.moved) + 1/float64(t.free)))
	return (pm-pf)/se >= sayZ
}
