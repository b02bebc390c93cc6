package gauge

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

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

// A Decision is what the judge decided of a set of calls (a claim's
// judgement is results/verdict's Verdict).
type Decision struct {
	// Contended[i] says call i ran slower with a reference that moved.
	Contended []bool
	// Say says which references predicted the program's cost in these
	// calls (with the run's earlier rows): only those flag a call.
	Say [Refs]bool
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
// with a say moved (alone); against the calls on which it did not move
// where few are free (judge).
type evidence struct{ moved, alone [Refs]tally }

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
// For its say, a call of a stream is slow when it costs more than the
// stream's calls, or its free calls (on which no reference moved) where
// those are cheaper, by slowLimits' margin. A reference has its say when
// the calls it marks as moved are slow at least sayRatio times as often
// as the free calls (where under minFreeShare of the calls are free, as
// those it did not move in), and surely so (a one-sided test of the two
// shares at sayZ standard errors), and still does on its own: a
// reference that moves whenever one with a say does, and not otherwise
// with the program, loses it. A reference that moves while the program
// does not flags nothing, and a program that runs slower while no
// reference moves is not contended: the estimators keep to its fast
// calls. The calls flagged are those on which a reference with a say
// moved and which are slow against the calls on which none with a say
// did. See docs/method.md#the-judge.
func judge(calls []Call, th Load, run evidence) Decision {
	v := Decision{Contended: make([]bool, len(calls))}
	var moved [Refs][]bool
	for k := range moved {
		moved[k] = make([]bool, len(calls))
		for i, c := range calls {
			moved[k][i] = c.Load[k] > th[k] // +Inf: never
		}
	}
	// Slow, for the say: against the stream's calls, or its free calls
	// (no reference moved) where those show it faster. Not against the
	// free calls alone: a reference that moves in nearly every call
	// leaves too few of them to tell a cost from.
	all, free := make([]bool, len(calls)), make([]bool, len(calls))
	for i := range calls {
		all[i], free[i] = true, true
		for k := range th {
			free[i] = free[i] && !moved[k][i]
		}
	}
	limit, judged := slowLimits(calls, all)
	freeLimit, freeJudged := slowLimits(calls, free)
	for s := range limit {
		if freeJudged[s] && freeLimit[s] < limit[s] {
			limit[s] = freeLimit[s]
		}
	}
	slow := make([]bool, len(calls))
	for i, c := range calls {
		slow[i] = judged[c.Stream] && c.Cost > limit[c.Stream]
	}
	// alone says whether k is the only reference of others (and k) that
	// moved in call i.
	alone := func(k, i int, others [Refs]bool) bool {
		for j := range others {
			if others[j] && j != k && moved[j][i] {
				return false
			}
		}
		return true
	}
	// count tallies reference k's moved calls on which none of the
	// references in others moved, against the free calls; or, where
	// fewer than minFreeShare of the calls are free, against those on
	// which neither k nor any of others moved: a reference that moves in
	// nearly every call leaves too few free calls to hold the others
	// against (docs/method.md#the-judge).
	nfree := 0
	for _, f := range free {
		if f {
			nfree++
		}
	}
	few := float64(nfree) < minFreeShare*float64(len(calls))
	count := func(k int, others [Refs]bool) tally {
		var t tally
		for i, c := range calls {
			switch {
			case !judged[c.Stream] || !alone(k, i, others):
			case moved[k][i]:
				t.add(true, slow[i])
			case free[i] || few:
				t.add(false, slow[i])
			}
		}
		return t
	}
	for k := range th {
		v.shown.moved[k] = count(k, [Refs]bool{})
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
	// The calls to compare with are those on which no reference with a
	// say moved: one that moves whatever the program does does not
	// narrow them.
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
// slow, judged from its calls that pick selects: their 25th percentile,
// plus slowMargin of it or three times their spread down to their 5th
// percentile, whichever is more (a quarter of them may be slow without
// moving it), and at most maxSlowMargin of it (a spread taken from few
// calls, or from calls of two states, would otherwise put the limit past
// the contended state). judged is false for a stream with fewer than
// minFree such calls.
func slowLimits(calls []Call, pick []bool) (limit []float64, judged []bool) {
	var costs [][]float64
	for i, c := range calls {
		for len(costs) <= c.Stream {
			costs = append(costs, nil)
		}
		if pick[i] {
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
		cost := sample.Quantile(0.25)
		margin := math.Max(slowMargin*cost, 3*(cost-sample.Quantile(0.05)))
		limit[s] = cost + math.Min(margin, maxSlowMargin*cost)
		judged[s] = true
	}
	return limit, judged
}

const (
	// slowMargin is the least excess over a stream's free cost that
	// makes a call slow, maxSlowMargin the most: the contended states
	// the suite has met cost 1.2 times the free one or more
	// (docs/method.md#the-judge).
	slowMargin    = 0.03
	maxSlowMargin = 0.10
	// minFree is the fewest free calls of a stream its free cost is
	// judged from; below minFreeShare of the calls free, a reference's
	// moved calls are held against those on which it did not move.
	minFree      = 10
	minFreeShare = 0.03
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
