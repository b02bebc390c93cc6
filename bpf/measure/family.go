package measure

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/mark"
	"bpfbench/bpf/measure/pattern"
	"bpfbench/bpf/measure/robust"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/sched"
)

// loopSizes are the sizes of the calls of v and base: the loops' own
// (testrun.Loop.Sizes), the smaller maximum of the two.
func loopSizes(v, base *testrun.Loop) CallSizes {
	s := v.Sizes()
	if base != nil {
		s.Max = min(s.Max, base.Sizes().Max)
	}
	return CallSizes{Warm: s.Warm, Min: s.Min, Max: s.Max, MaxTurn: s.MaxTurn}
}

// icountMinCalls caps the floor of 100,000 repetitions under QEMU -icount
// at this many -bpfbench.calltime's worth: there the floor keeps the
// counts of cheap programs exact, and for costly ones only costs emulated
// time (docs/icount.md#counting-instructions).
const icountMinCalls = 10

// recorder makes the streams of a loop and its baseline, and keeps what
// Measure learns besides the time: the kernel's averages and fixed
// costs of the variant's calls, and the calls measured again.
type recorder struct {
	// name is the row's, for the anatomy's log.
	name       string
	anatomy    *mark.Log
	base       *testrun.Loop
	kns, call  []float64
	remeasured int
	disagreed  int
}

func (c *recorder) stream(l *testrun.Loop, record bool) Stream {
	role := "v"
	if l == c.base {
		role = "base"
	}
	return func(size uint32) (float64, error) {
		c.anatomy.Stream(c.name, role)
		s, err := l.Measure(size)
		c.anatomy.Stream("", "")
		if err != nil {
			if l == c.base {
				err = fmt.Errorf("baseline: %w", err)
			}
			return 0, err
		}
		c.remeasured += s.Restarts + s.Rejected
		if s.Disagreed {
			c.disagreed++
		}
		if record {
			c.kns = append(c.kns, float64(s.KernelNs))
			c.call = append(c.call, float64(s.FixedNs)/1e3)
		}
		return s.Ns, nil
	}
}

// reset forgets the warm-up's samples.
func (c *recorder) reset() { c.kns, c.call, c.remeasured, c.disagreed = nil, nil, 0, 0 }

// newLoopRunner warms up and sizes the rounds of v, with base when set.
func newLoopRunner(name string, budget Budget, v, base *testrun.Loop, sizes *CallSizes, o BenchOptions) (*recorder, *runner, error) {
	c := &recorder{name: name, base: base, anatomy: o.Anatomy}
	for _, l := range []*testrun.Loop{v, base} {
		if l == nil {
			continue
		}
		for _, m := range append([]*testrun.Loop{l}, l.Layouts...) {
			m.Emulated, m.Anatomy = o.Emulated, o.Anatomy
		}
	}
	streams := []Stream{c.stream(v, true)}
	if base != nil {
		streams = append(streams, c.stream(base, false))
	}
	u := loopSizes(v, base)
	if sizes != nil {
		u = *sizes
	}
	sz := o.callSizing(u)
	sz.NewRound = func() {
		v.NextLayout()
		if base != nil {
			base.NextLayout()
		}
	}
	sz.Layout = v.Layout
	sz.Layouts = len(v.Layouts) + 1
	if base != nil {
		sz.Layouts = lcm(sz.Layouts, len(base.Layouts)+1)
	}
	x, err := newRunner(budget, sz, streams)
	if err != nil {
		return nil, nil, err
	}
	c.reset()
	o.Anatomy.Measured(name)
	return c, x, nil
}

// result summarises the rounds (summarise), with what the loops learnt
// besides the time.
func (c *recorder) result(rounds *Rounds, contention *gauge.Contention) Result {
	r := summarise(rounds, contention)
	r.KernelNs = robust.Quantile(c.kns, robust.LowQuantile)
	r.CallUs = robust.Quantile(c.call, 0.5)
	r.Remeasured, r.Disagreed = c.remeasured, c.disagreed
	return r
}

// A Row is one sub-benchmark of a family measured by Family: a test_run
// loop and, optionally, the baseline it is paired with, measured with the
// family's other such rows; or the streams Start sets up, measured in a
// stretch of their own.
type Row struct {
	// Name is the sub-benchmark's name (b.Run's).
	Name string
	// Variant is the loop measured, Base its baseline (nil: none, or the run
	// is not interleaved).
	Variant, Base *testrun.Loop
	// Sizes, when set, are the row's own call sizes in place of its
	// loops' (testrun.Loop.Sizes).
	Sizes *CallSizes
	// Setup, when set, makes the row's loops (Variant, Base) and may set
	// its Report and Check: Family calls it only when -test.bench selects
	// the row, so that a row nobody asked for costs no setup (attaching
	// 38 programs takes seconds in an emulated guest). Its error is the
	// row's Err.
	Setup func() (Row, error)
	// Start, for a row whose setup a visit of a few calls would not
	// amortise (a traffic rig's receivers, a remote stage, a real NIC),
	// sets the row up in its sub-benchmark and returns its streams: they
	// are measured there, in a stretch of their own, once a run.
	Start func(b *testing.B) Job
	// Skip, when set, is why the row is not measured: its sub-benchmark
	// skips saying so. Err, when set, is why its setup failed: its
	// sub-benchmark skips or fails saying so, by the skip rule
	// (probe.SkipReason).
	Skip string
	Err  error
	// Report, when set, gives the row's own figures from its Result,
	// which the engine's reporter writes beside its own: on every call
	// testing makes of the sub-benchmark's body, so it says things in
	// words only when Result.Repeated is false. A Start row's figures are
	// all its own, given once.
	Report func(b *testing.B, r Result) []Figure
	// Check, when set, checks the row's Result for what only the row
	// knows (the instruction-count calibration: bench/xdp_test.go), once,
	// after its figures are reported: its error skips or fails the row's
	// sub-benchmark by the skip rule.
	Check func(r Result) error
}

// runnable says whether the row could be measured in the family's rounds:
// not skipped, not failed (a Setup not yet run has not failed), not a
// Start row, which is measured alone.
func (r Row) runnable() bool {
	return r.Skip == "" && r.Err == nil && r.Start == nil
}

// setUp is r with what its Setup made: the loops, and the Report and
// Check it sets; its error is the row's Err.
func (r Row) setUp() Row {
	set, err := r.Setup()
	r.Setup = nil
	if err != nil {
		r.Err = err
		return r
	}
	r.Variant, r.Base = set.Variant, set.Base
	if set.Sizes != nil {
		r.Sizes = set.Sizes
	}
	if set.Report != nil {
		r.Report = set.Report
	}
	if set.Check != nil {
		r.Check = set.Check
	}
	return r
}

// Job is what a Start row hands the engine: its streams (the one the row
// reports first, then what it is paired with), the sizes of their calls,
// and what to forget after the warm-up (Reset, when set).
type Job struct {
	Streams []Stream
	Sizes   CallSizes
	Reset   func()
	// Report, when set, gives the row's own figures from its Result in
	// place of Row.Report: what the row learnt in setting up the job
	// stays with the job.
	Report func(b *testing.B, r Result) []Figure
}

// Family measures the rows of a family and reports each as a
// sub-benchmark of b. The rows are measured together: each is set up and
// warmed up once, then visited one round at a time, in an order shuffled
// anew on every pass over them, until each has measured its budget, so
// that every row sees the same mix of the machine's states and any two
// rows compare as a pair (randomised multiple interleaved trials: Abedi
// and Brecht, ICPE 2017). Only the rows that -test.bench selects are
// measured (pattern.Selected), and a row with a Setup is set up only
// then; each measures for the time of the rows left out too, but not of
// those whose setup failed (Budget.Shared, docs/method.md#selected-rows).
// A Start row is measured alone, in its own
// sub-benchmark, through the same rounds, steal tally and summary
// (stretch). See docs/method.md#interleaved-rows.
func Family(b *testing.B, o BenchOptions, rows []Row) {
	b.Helper()
	type member struct {
		name  string
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
	for i, row := range rows {
		m := &member{name: b.Name() + "/" + row.Name, row: row}
		members[i] = m
		if !row.runnable() || !pattern.Selected(m.name) {
			continue
		}
		if row.Setup != nil {
			m.row = row.setUp()
			if m.row.Err != nil {
				continue
			}
		}
		if !o.Interleave {
			m.row.Base = nil
		}
		live = append(live, m)
	}
	// Counted after the setups: a row whose setup failed lends the others
	// no time, one -test.bench left out lends its own.
	candidates := 0
	for _, m := range members {
		if m.row.runnable() {
			candidates++
		}
	}
	budget := o.Budget()
	if !o.Clocks.Icount { // a count is exact however long it is taken
		budget = budget.Shared(candidates, len(live))
	}
	if len(live) > 0 {
		err := sched.Pinned(o.CPU, func() error {
			for _, m := range live {
				m.rec, m.x, m.err = newLoopRunner(m.name, budget, m.row.Variant, m.row.Base, m.row.Sizes, o)
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
			if err := o.Anatomy.Flush(); err != nil {
				return err
			}
			for _, m := range live {
				if m.err == nil {
					m.res = m.rec.result(m.x.r, o.Contention)
				}
			}
			return nil
		})
		o.Record.Require(b, err, "pin the measuring thread")
	}
	// A row's sub-benchmark only reports what was measured above, and
	// uses neither b.N nor b.Loop: b.Loop would spin empty until
	// -benchtime passed, a second a row. testing then calls the body a
	// few times as it ramps b.N, in no time, and each call reports the
	// same figures; the run's record counts the row once.
	for _, m := range members {
		o.Record.Run(b, m.row.Name, func(b *testing.B) {
			if m.row.Skip != "" {
				o.Record.Skip(b, m.row.Skip)
			}
			o.Record.Require(b, m.row.Err, "set up")
			if m.row.Start != nil {
				job := m.row.Start(b)
				res, err := stretch(b, o, job)
				o.Record.Require(b, err, "measure "+m.row.Name)
				row := m.row
				if job.Report != nil {
					row.Report = job.Report
				}
				// Go's ns/op would be the wall time of the whole row, and
				// one op is not one call: the row's own figures say what
				// a call is (ns/pkt).
				report(b, o, row, res, []Figure{{Unit: "ns/op", Value: 0}})
				return
			}
			if m.x == nil && m.err == nil {
				b.Fatalf("row %s was not measured: pattern.Selected disagrees with the testing package", m.row.Name)
			}
			o.Record.Require(b, m.err, "measure test_run loop")
			m.res.Repeated, m.shown = m.shown, true
			m.res.Steal = stealFrac(&m.steal)
			report(b, o, m.row, m.res, loopFigures(b, o.Record, m.row.Variant, m.res))
		})
	}
}
