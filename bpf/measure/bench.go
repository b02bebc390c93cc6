package measure

import (
	"fmt"
	"math"
	"testing"
	"time"

	"bpfbench/bpf/measure/anatomy"
	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/robust"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"
)

// BenchOptions control how a variant is benchmarked.
type BenchOptions struct {
	// CPU the measuring thread is pinned to.
	CPU int
	// CallTime is the target duration of one long call. Long enough that
	// the fixed per-call cost is small next to it, short enough that the
	// machine's speed rarely changes inside one call.
	CallTime time.Duration
	// Interleave measures a variant and its baseline in alternating rounds.
	Interleave bool
	// Resolution, when set, goes on measuring past -benchtime, up to
	// MaxTime, until the paired difference's 95% half-width is at most
	// Resolution ns.
	Resolution float64
	MaxTime    time.Duration
	// Duration, when set, is how long each row measures, whatever
	// -benchtime says: the real-NIC mode's -bpfbench.duration.
	Duration time.Duration
	// Contention, when set, is the run's record of the core's load: calls
	// made while it was contended are left out of the figures.
	Contention *gauge.Contention
	// Clocks says what the clocks count (probe.Icount): where they count
	// instructions, sizing caps the floor of repetitions
	// (icountMinCalls) and figures are reported as counts.
	Clocks Clocks
	// Emulated says the CPU is emulated (probe.Emulated): a sample whose
	// clocks disagree is kept, not measured again.
	Emulated bool
}

// Budget is how long a sub-benchmark measures: -benchtime, extended as
// o.Resolution asks, or o.Duration.
func (o BenchOptions) Budget() Budget {
	if o.Duration > 0 {
		return Budget{Time: o.Duration}
	}
	b := BenchTime()
	b.Resolution, b.Max = o.Resolution, o.MaxTime
	return b
}

// OncePinned runs measure a single time per benchmark run, however Go
// would ramp b.N, on a thread pinned to cpu (sched.Pinned), and returns its
// error, after reporting steal-frac: the share of cpu's time its vCPU was
// stolen by the host meanwhile (/proc/stat; none when no tick passed). The
// setup before it (attaching 48 fillers, building a rig) is done once, and
// measure's own budget decides how long it measures. It must be the
// benchmark's only use of b.N or b.Loop.
func (c Clocks) OncePinned(b *testing.B, cpu int, measure func() error) error {
	b.Helper()
	steal := sched.StartSteal(cpu)
	var err error
	done := false
	for b.Loop() {
		if !done {
			err = sched.Pinned(cpu, measure)
			done = true
		}
	}
	if c.Icount {
		// Go's own ns/op is the virtual time of the whole benchmark:
		// instructions, of setup included, not a cost of anything.
		b.ReportMetric(0, "ns/op")
	}
	if f, ok := steal.Frac(); ok {
		c.Diag(b, f, "steal-frac")
	}
	return err
}

// Result summarises the samples of one variant.
type Result struct {
	// Ns is the low quantile (robust.LowQuantile) of the variant's per-round
	// cost, KernelNs the same quantile of the kernel's own averages.
	Ns, KernelNs float64
	// Cycles is Ns in cycles of the clock rate each round ran at
	// (Rounds.Cycles), GHz the median rate (NaN where not measured).
	Cycles, GHz float64
	// CallUs is the median fixed cost of a test_run call: the median,
	// because softirq work that happens to land in one short call would
	// otherwise dominate the mean.
	CallUs float64
	// Delta is the median paired difference against the baseline with
	// its 95% interval; Rel the same as a fraction of the baseline.
	Delta, Rel robust.Estimate
	HaveDelta  bool
	// Rounds is the variant's measured calls (Rounds.Count).
	Rounds int
	// Remeasured counts measurements taken again: loops the kernel
	// abandoned on EINTR, and samples whose clocks disagreed.
	Remeasured int
	// Disagreed counts samples whose clocks still disagreed after
	// maxRejected tries, kept and reported as such (clock-disagree).
	Disagreed int
	// Contended says how many of the calls ran on a contended core, left out
	// of the figures.
	Contended Contended
	// Repeated says the row's figures were reported before: testing calls
	// the body of a Family row again as it ramps b.N, and each call
	// reports the same figures, but says what it says in words once.
	Repeated bool
}

// reportLoop reports the figures of loop v's Result: ns/op (sub-ns
// resolution, from thread CPU time), kernel-ns/op (the kernel's truncated
// average), call-us (the fixed cost of one test_run call) and, with a
// baseline, delta-ns/op (the median paired difference v-base), its 95%
// half-width delta-ci95-ns and delta-rel (the difference as a fraction of
// base); and it logs what they leave out unless r.Repeated.
func reportLoop(b *testing.B, c Clocks, v *Loop, r Result) {
	b.Helper()
	// A loop that repeats inside the program (Loop.Iterations) is not
	// timed by the kernel: there is no kernel average to compare with.
	kernelTimed := v.Iterations == nil
	if kernelTimed {
		if err := r.checkKernel(); err != nil {
			// Reported, never a failure of the user's run: see
			// docs/method.md on where the time goes when the clocks
			// disagree.
			if !r.Repeated {
				b.Logf("%v (kept: clock-disagree %d of %d calls)", err, r.Disagreed, r.Rounds)
			}
			probe.Flag(b, err.Error())
		}
	}
	if r.Remeasured > 0 && !r.Repeated {
		b.Logf("%d measurements of %d calls were taken again (EINTR, or the clocks disagreed)", r.Remeasured, r.Rounds)
	}
	c.Report(b, r.Ns, "ns/op")
	if !v.KernelClock {
		// A time in whole kernel ns has no cycles to speak of.
		c.ReportCycles(b, r.Cycles, r.GHz, "cycles/op")
	}
	if kernelTimed {
		c.Diag(b, r.KernelNs, "kernel-ns/op")
		c.Diag(b, float64(r.Disagreed)/float64(max(r.Rounds, 1)), "clock-disagree")
	}
	c.Diag(b, r.CallUs, "call-us")
	c.Diag(b, float64(r.Remeasured), "remeasured")
	if r.Repeated {
		r.Contended.Metric(b)
	} else {
		r.Contended.Report(b)
	}
	// A delta between two loops timed by the kernel's whole-ns average
	// (KernelClock) is a truncation artifact, not a difference: none.
	if r.HaveDelta && !v.KernelClock {
		c.Report(b, r.Delta.Value, "delta-ns/op")
		c.Diag(b, r.Rel.Value, "delta-rel")
		if h := r.Delta.Half(); !math.IsInf(h, 0) {
			c.Report(b, h, "delta-ci95-ns")
		}
	}
}

// maxTurn is the most calls a test_run loop makes in a row in a round
// (sizing.MaxTurn): enough for the dispatcher's slowest switch, attaching
// or detaching 47 fillers (docs/method.md#turns-calls-in-a-row-per-round).
const maxTurn = 16

// loopSizes are a test_run loop's repetitions: at least 100,000 a call,
// so that the short call's fixed cost never dominates (in an
// instruction-counting guest the floor stops at icountMinCalls calls'
// time: BenchOptions.callSizing); a loop that repeats inside the program
// (Loop.Iterations) has its own maximum.
func loopSizes(v, base *Loop) CallSizes {
	u := CallSizes{Warm: 10000, Min: 100_000, Max: 1 << 26, MaxTurn: maxTurn}
	if v.Iterations != nil || (base != nil && base.Iterations != nil) {
		u.Max = MaxIterations
	}
	return u
}

// icountMinCalls caps the floor of 100,000 repetitions under QEMU -icount
// at this many -bpfbench.calltime's worth. There the floor still buys
// exact counts for cheap programs (with a floor of 1,000 instead, the
// dispatcher's k1 came out 2.04 instructions, not 2, at 62,000
// repetitions), and for costly ones only costs: 38 fentry programs are
// 3,800 instructions a run, so their calls took 380 ms of virtual time, 95
// calltimes, and their rows up to 23 s of CI's per kernel.
const icountMinCalls = 10

// recorder makes the streams of a loop and its baseline, and keeps what
// Measure learns besides the time: the kernel's averages and fixed
// costs of the variant's calls, and the calls measured again.
type recorder struct {
	// name is the row's, for the anatomy's log.
	name       string
	base       *Loop
	kns, call  []float64
	remeasured int
	disagreed  int
}

func (c *recorder) stream(l *Loop, record bool) Stream {
	role := "v"
	if l == c.base {
		role = "base"
	}
	return func(size uint32) (float64, error) {
		anatomy.Stream(c.name, role)
		s, err := l.Measure(size)
		anatomy.Stream("", "")
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
func newLoopRunner(name string, budget Budget, v, base *Loop, o BenchOptions) (*recorder, *runner, error) {
	c := &recorder{name: name, base: base}
	for _, l := range []*Loop{v, base} {
		if l == nil {
			continue
		}
		for _, m := range append([]*Loop{l}, l.Layouts...) {
			m.Emulated = o.Emulated
		}
	}
	streams := []Stream{c.stream(v, true)}
	if base != nil {
		streams = append(streams, c.stream(base, false))
	}
	sz := o.callSizing(loopSizes(v, base))
	sz.NewRound = func() {
		v.NextLayout()
		if base != nil {
			base.NextLayout()
		}
	}
	sz.Layouts = len(v.Layouts) + 1
	if base != nil {
		sz.Layouts = lcm(sz.Layouts, len(base.Layouts)+1)
	}
	x, err := newRunner(budget, sz, streams)
	if err != nil {
		return nil, nil, err
	}
	c.reset()
	anatomy.Measured(name)
	return c, x, nil
}

// result summarises the rounds from their uncontended calls (all of them
// when the core was never uncontended long enough: Result.Contended).
func (c *recorder) result(rounds *Rounds, threshold gauge.Load) Result {
	u, load := rounds.clean(threshold)
	r := Result{
		Ns:         u.Location(0).Value,
		Cycles:     u.Cycles(0).Value,
		GHz:        u.GHz(0),
		KernelNs:   robust.Quantile(c.kns, robust.LowQuantile),
		CallUs:     robust.Quantile(c.call, 0.5),
		Rounds:     rounds.Count(),
		Remeasured: c.remeasured,
		Disagreed:  c.disagreed,
		Contended:  load,
	}
	if c.base != nil {
		r.HaveDelta = true
		r.Delta, r.Rel = u.Paired(0, 1), u.Relative(0, 1)
	}
	return r
}

// checkKernel compares the suite's clock with the kernel's over all
// rounds (Measure already compared each sample): a disagreement means the
// suite measures something the kernel's loop does not, or the reverse, and
// no number from it can be trusted.
func (r Result) checkKernel() error {
	if !clocksAgree(r.Ns, r.KernelNs) {
		return fmt.Errorf("suite measured %.2f ns/op but the kernel %.0f ns/op: clocks disagree", r.Ns, r.KernelNs)
	}
	return nil
}
