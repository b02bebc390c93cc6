package measure

import (
	"math/rand/v2"
	"testing"
	"time"

	"bpfbench/bpf/measure/anatomy"
	"bpfbench/bpf/measure/pattern"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"
)

// A Row is one sub-benchmark of a family measured by Family: a test_run
// loop and, optionally, the baseline it is paired with.
type Row struct {
	// Name is the sub-benchmark's name (b.Run's).
	Name string
	// Variant is the loop measured, Base its baseline (nil: none, or the run
	// is not interleaved).
	Variant, Base *Loop
	// Skip, when set, is why the row is not measured: its sub-benchmark
	// skips saying so. Err, when set, is why its setup failed: its
	// sub-benchmark fails saying so.
	Skip string
	Err  error
	// Report, when set, runs in the row's sub-benchmark after its
	// figures are reported, with its Result: on every call testing makes
	// of the sub-benchmark's body, so it reports its figures each time
	// and says things in words only when Result.Repeated is false.
	Report func(b *testing.B, r Result)
}

// Family measures the rows of a family and reports each as a
// sub-benchmark of b. The rows are measured together: each is set up and
// warmed up once, then visited one round at a time, in an order shuffled
// anew on every pass over them, until each has measured its budget, so
// that every row sees the same mix of the machine's states and any two
// rows compare as a pair (randomised multiple interleaved trials: Abedi
// and Brecht, ICPE 2017). Only the rows that -test.bench selects are
// measured (pattern.Selected), each for the time of the rows left out too
// (Budget.Shared). See docs/method.md#interleaved-rows.
func Family(b *testing.B, o BenchOptions, rows []Row) {
	b.Helper()
	type member struct {
		row   Row
		rec   *recorder
		x     *runner
		res   Result
		shown bool
		err   error
		steal sched.StealTally
	}
	members := make([]*member, len(rows))
	var live []*member
	candidates := 0
	for i, row := range rows {
		m := &member{row: row}
		members[i] = m
		if !o.Interleave {
			m.row.Base = nil
		}
		if row.Skip != "" || row.Err != nil {
			continue
		}
		candidates++
		if pattern.Selected(b, row.Name) {
			live = append(live, m)
		}
	}
	budget := o.Budget()
	if !o.Clocks.Icount { // a count is exact however long it is taken
		budget = budget.Shared(candidates, len(live))
	}
	if len(live) > 0 {
		err := sched.Pinned(o.CPU, func() error {
			for _, m := range live {
				m.rec, m.x, m.err = newLoopRunner(b.Name()+"/"+m.row.Name, budget, m.row.Variant, m.row.Base, o)
			}
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
			for {
				var pass []*member
				for _, m := range live {
					if m.err == nil && !m.x.done() {
						pass = append(pass, m)
					}
				}
				if len(pass) == 0 {
					break
				}
				rng.Shuffle(len(pass), func(i, j int) { pass[i], pass[j] = pass[j], pass[i] })
				for _, m := range pass {
					m.err = m.steal.During(o.CPU, m.x.visit)
				}
			}
			// After the rounds, outside every window.
			if err := anatomy.Flush(); err != nil {
				return err
			}
			th := o.Contention.Threshold()
			for _, m := range live {
				if m.err == nil {
					m.res = m.rec.result(m.x.r, th)
				}
			}
			return nil
		})
		probe.Require(b, err, "pin the measuring thread")
	}
	// A row's sub-benchmark only reports what was measured above, and
	// uses neither b.N nor b.Loop: b.Loop would spin empty until
	// -benchtime passed, a second a row. testing then calls the body a
	// few times as it ramps b.N, in no time, and each call reports the
	// same figures; probe.Run counts the row once.
	for _, m := range members {
		probe.Run(b, m.row.Name, func(b *testing.B) {
			if m.row.Skip != "" {
				probe.Skip(b, m.row.Skip)
			}
			if m.row.Err != nil {
				b.Fatal(m.row.Err)
			}
			if m.x == nil && m.err == nil {
				b.Fatalf("row %s was not measured: Selected disagrees with the testing package", m.row.Name)
			}
			probe.Require(b, m.err, "measure test_run loop")
			m.res.Repeated, m.shown = m.shown, true
			if f, ok := m.steal.Frac(); ok {
				o.Clocks.Diag(b, f, "steal-frac")
			}
			reportLoop(b, o.Clocks, m.row.Variant, m.res)
			if m.row.Report != nil {
				m.row.Report(b, m.res)
			}
		})
	}
}
