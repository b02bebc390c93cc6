package measure

import (
	"math"
	"testing"

	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/sched"
)

// stretch measures w once a run, however Go would ramp b.N (b.Loop, so
// the row's setup before it is done once), in rounds on a thread pinned to
// o.CPU for o.Budget(), and summarises them as Family's rows are, with
// the share of the CPU's time its vCPU was stolen by the host meanwhile.
// Go's timer is left alone: the row reports its own figures, and no
// ns/op of Go's (report).
func stretch(b *testing.B, o BenchOptions, w Job) (Result, error) {
	b.Helper()
	var r *Rounds
	var steal sched.StealTally
	var err error
	done := false
	for b.Loop() {
		if done {
			continue
		}
		done = true
		err = steal.During(o.CPU, func() error {
			return sched.Pinned(o.CPU, func() error {
				var err error
				r, err = run(o.Budget(), o.callSizing(w.Sizes), w.Reset, w.Streams...)
				return err
			})
		})
	}
	if err != nil {
		return Result{}, err
	}
	res := summarise(r, o.Contention)
	res.Steal = stealFrac(&steal)
	return res, nil
}

// stealFrac is t's stolen share, NaN when no tick passed.
func stealFrac(t *sched.StealTally) float64 {
	if f, ok := t.Frac(); ok {
		return f
	}
	return math.NaN()
}

// summarise is what every row reports from its rounds: the first
// stream's cost (its low quantile, and in cycles) and, with a second
// stream, the paired difference, all from the uncontended calls (all of
// them when too few were: Result.Contended), which Result.Samples keeps.
func summarise(rounds *Rounds, c *gauge.Contention) Result {
	u, load := rounds.clean(c)
	r := Result{
		Ns:        u.Location(0).Value,
		Cycles:    u.Cycles(0).Value,
		GHz:       u.GHz(0),
		Memory:    u.Reference(0, gauge.Memory),
		Calls:     rounds.Count(),
		Contended: load,
		Samples:   u,
	}
	if len(u.Ns) > 1 {
		r.HaveDelta = true
		r.Delta, r.Rel = u.Paired(0, 1), u.Relative(0, 1)
	}
	return r
}
