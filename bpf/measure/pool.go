package measure

import (
	"math"

	"bpfbench/bpf/measure/robust"
)

// A pooled row is a row of a pool (Row.Pool) with its result: own says
// the row measures the pool's baseline itself (it has no Base), so its
// variant's calls are baseline calls.
type pooled struct {
	res *Result
	own bool
}

// sharePool sets the cycles/op of a pool's rows: the level of all their
// baseline calls together (the mean over layouts of each layout's
// densest part, robust.DenseMean) plus each row's paired difference in
// cycles (its calls less its baseline's in the same rounds, the same
// estimator); a row of the baseline itself reports the level. A state of
// the host core that a row samples in few rounds moves its own calls and
// its baseline's in those rounds alike, so the difference cancels it,
// and the level is drawn from every row's rounds
// (docs/method.md#a-shared-baseline). A row without cycles keeps its
// figure; so does every row where the pool has no baseline calls. A row
// given the pool's figure keeps its own in OwnCycles, a diagnostic.
func sharePool(rows []pooled) {
	var c []float64
	var layouts []int
	for _, p := range rows {
		u := p.res.Samples
		s := 1
		if p.own {
			s = 0
		}
		if u == nil || s >= len(u.Ns) {
			continue
		}
		x, l := u.callCycles(s, -1)
		c, layouts = append(c, x...), append(layouts, l...)
	}
	level := robust.DenseMean(c, layouts)
	if math.IsNaN(level) {
		return
	}
	for _, p := range rows {
		u := p.res.Samples
		if u == nil || math.IsNaN(p.res.Cycles) {
			continue
		}
		own := p.res.Cycles
		switch d, l := u.callCycles(0, 1); {
		case p.own:
			p.res.Cycles = level
		case len(d) > 0:
			p.res.Cycles = level + robust.DenseMean(d, l)
		default:
			continue
		}
		p.res.OwnCycles = own
	}
}
