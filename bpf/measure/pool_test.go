package measure

import (
	"math"
	"testing"
)

// poolRounds are rounds of a variant and, unless base is nil, its
// baseline, one call a turn, at a clock whose cycle is one ns (so a
// call's cycles are its ns), over layouts 0 and 1 in turn.
func poolRounds(v, base []float64) *Result {
	r := &Rounds{Turn: 1, Ns: [][]float64{v}}
	if base != nil {
		r.Ns = append(r.Ns, base)
	}
	for range r.Ns {
		cy, lay := make([]float64, len(v)), make([]int, len(v))
		for i := range cy {
			cy[i], lay[i] = 1, i%2
		}
		r.CycleNs, r.Layout = append(r.CycleNs, cy), append(r.Layout, lay)
	}
	return &Result{Cycles: r.Cycles(0).Value, Samples: r}
}

// stepped is n calls at level, plus step in the rounds high says, with
// a jitter of a few hundredths that repeats every seven calls.
func stepped(n int, level, step float64, high func(i int) bool) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = level + 0.01*float64(i%7-3)
		if high(i) {
			xs[i] += step
		}
	}
	return xs
}

// TestSharePool: a row that makes few rounds, all of them while the
// host core's state added a cycle to every call (a dispatcher row with
// 47 fillers), reports that cycle in its own figure; pooled, it reports
// the baseline's level over every row's rounds plus its paired
// difference, which the state moved for both streams alike. A row with
// a difference of its own keeps it; the baseline's own row reports the
// level; a row without cycles keeps its figure.
func TestSharePool(t *testing.T) {
	never := func(int) bool { return false }
	always := func(int) bool { return true }
	some := func(i int) bool { return i%10 < 3 } // 30% of the rounds
	own := poolRounds(stepped(400, 19, 1, some), nil)
	few := poolRounds(stepped(16, 19.1, 1, always), stepped(16, 19, 1, always))
	parse := poolRounds(stepped(400, 25, 1, some), stepped(400, 19, 1, some))
	blind := poolRounds(stepped(16, 30, 0, never), stepped(16, 19, 0, never))
	blind.Cycles = math.NaN()
	if math.Abs(few.Cycles-20.1) > 0.05 {
		t.Fatalf("the few rounds' own figure %.3f, want about 20.1: the constructed state did not move it", few.Cycles)
	}
	sharePool([]pooled{{res: own, own: true}, {res: few}, {res: parse}, {res: blind}})
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"the baseline's own row", own.Cycles, 19},
		{"the row of few rounds", few.Cycles, 19.1},
		{"the row with a difference of its own", parse.Cycles, 25},
	} {
		if math.Abs(c.got-c.want) > 0.05 {
			t.Errorf("%s: %.3f cycles/op pooled, want %.2f", c.name, c.got, c.want)
		}
	}
	if !math.IsNaN(blind.Cycles) || blind.OwnCycles != 0 {
		t.Errorf("a row without cycles reports %.3f pooled (own %.3f), want none", blind.Cycles, blind.OwnCycles)
	}
	if math.Abs(few.OwnCycles-20.1) > 0.05 {
		t.Errorf("the row of few rounds keeps %.3f as its own figure, want about 20.1", few.OwnCycles)
	}

	// A pool whose rows have no baseline calls changes nothing.
	alone := poolRounds(stepped(16, 25, 0, never), nil)
	alone.Samples.Ns = alone.Samples.Ns[:1]
	before := alone.Cycles
	sharePool([]pooled{{res: alone}})
	if alone.Cycles != before || alone.OwnCycles != 0 {
		t.Errorf("a pool without baseline calls moved a row from %.3f to %.3f", before, alone.Cycles)
	}
}
