package measure

import (
	"fmt"
	"math"
	"testing"
	"time"

	"bpfbench/bpf/probe"
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
}

// Budget is how long a sub-benchmark measures: -benchtime, extended as
// o.Resolution asks.
func (o BenchOptions) Budget() Budget {
	b := BenchTime()
	b.Resolution, b.Max = o.Resolution, o.MaxTime
	return b
}

// Once runs measure a single time per benchmark run, however Go would ramp
// b.N: the setup before it (attaching 48 fillers, building a rig) is done
// once, and measure's own budget (BenchTime) decides how long it measures.
// It must be the benchmark's only use of b.N or b.Loop.
func Once(b *testing.B, measure func()) {
	b.Helper()
	done := false
	for b.Loop() {
		if !done {
			measure()
			done = true
		}
	}
	if _, ok := probe.Icount(); ok {
		// Go's own ns/op is the virtual time of the whole benchmark:
		// instructions, of setup included, not a cost of anything.
		b.ReportMetric(0, "ns/op")
	}
}

// OncePinned runs measure once (Once) on a thread pinned to cpu (Pinned)
// and returns its error, after reporting steal-frac: the share of cpu's
// time its vCPU was stolen by the host meanwhile (/proc/stat; none when no
// tick passed).
func OncePinned(b *testing.B, cpu int, measure func() error) error {
	b.Helper()
	steal := startSteal(cpu)
	var err error
	Once(b, func() { err = Pinned(cpu, measure) })
	if f, ok := steal.frac(); ok {
		b.ReportMetric(f, "steal-frac")
	}
	return err
}

// Result summarises the samples of one variant.
type Result struct {
	// Ns is the low quantile (LowQuantile) of the variant's per-round
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
	Delta, Rel Estimate
	HaveDelta  bool
	// Rounds is the variant's measured calls (Rounds.Count).
	Rounds int
	// Remeasured counts measurements taken again: loops the kernel
	// abandoned on EINTR, and samples whose clocks disagreed.
	Remeasured int
	// Disagreed counts samples whose clocks still disagreed after
	// maxRejected tries, kept and reported as such (clock-disagree).
	Disagreed int
}

// Bench measures loop v and reports ns/op (sub-ns resolution, from thread
// CPU time), kernel-ns/op (the kernel's truncated average) and call-us
// (the fixed cost of one test_run call). With a base and o.Interleave it
// measures base and v in alternating rounds and also reports delta-ns/op,
// the median paired difference v-base, with delta-ci95-ns, its 95%
// half-width, and delta-rel, the difference as a fraction of base. It
// measures once (see Once) for the budget of o.Budget.
func Bench(b *testing.B, v, base *Loop, o BenchOptions) Result {
	b.Helper()
	if !o.Interleave {
		base = nil
	}
	var r Result
	err := OncePinned(b, o.CPU, func() error {
		var err error
		r, err = measureRounds(o.Budget(), v, base, o.CallTime, b.ResetTimer)
		return err
	})
	probe.Require(b, err, "measure test_run loop")
	// A loop that repeats inside the program (Loop.Iterations) is not
	// timed by the kernel: there is no kernel average to compare with.
	kernelTimed := v.Iterations == nil
	if kernelTimed {
		if err := r.checkKernel(); err != nil {
			// Reported, never a failure of the user's run: see
			// docs/method.md on where the time goes when the clocks
			// disagree.
			b.Logf("%v (kept: clock-disagree %d of %d calls)", err, r.Disagreed, r.Rounds)
		}
	}
	if r.Remeasured > 0 {
		b.Logf("%d measurements of %d calls were taken again (EINTR, or the clocks disagreed)", r.Remeasured, r.Rounds)
	}
	Report(b, r.Ns, "ns/op")
	if !v.KernelClock {
		// A time in whole kernel ns has no cycles to speak of.
		ReportCycles(b, r.Cycles, r.GHz, "cycles/op")
	}
	if kernelTimed {
		Report(b, r.KernelNs, "kernel-ns/op")
		b.ReportMetric(float64(r.Disagreed)/float64(max(r.Rounds, 1)), "clock-disagree")
	}
	Report(b, r.CallUs, "call-us")
	b.ReportMetric(float64(r.Remeasured), "remeasured")
	// A delta between two loops timed by the kernel's whole-ns average
	// (KernelClock) is a truncation artifact, not a difference: none.
	if r.HaveDelta && !v.KernelClock {
		Report(b, r.Delta.Value, "delta-ns/op")
		b.ReportMetric(r.Rel.Value, "delta-rel")
		if h := r.Delta.Half(); !math.IsInf(h, 0) {
			Report(b, h, "delta-ci95-ns")
		}
	}
	return r
}

// maxTurn is the most calls a test_run loop makes in a row in a round
// (Sizing.MaxTurn): attaching or detaching 47 fillers took about half a
// second on the Intel Xeon 6/167 KVM guest, 30 calls' time.
const maxTurn = 16

// loopSizing sizes a test_run loop's long call: callTime's worth of
// repetitions, and at least 100,000, so that the short call's fixed cost
// never dominates. In an instruction-counting guest the floor stops at
// icountMinCalls calls' time.
func loopSizing(callTime time.Duration, v, base *Loop) Sizing {
	sz := Sizing{Warm: 10000, Min: 100_000, Max: 1 << 26, CallTime: callTime, Cycles: true, MaxTurn: maxTurn}
	if v.Iterations != nil || (base != nil && base.Iterations != nil) {
		sz.Max = MaxIterations
	}
	if _, ok := probe.Icount(); ok {
		sz.MinTime = icountMinCalls * callTime
	}
	return sz
}

// icountMinCalls caps the floor of 100,000 repetitions under QEMU -icount
// at this many -bpfbench.calltime's worth. There the floor still buys
// exact counts for cheap programs (with a floor of 1,000 instead, the
// dispatcher's k1 came out 2.04 instructions, not 2, at 62,000
// repetitions), and for costly ones only costs: 38 fentry programs are
// 3,800 instructions a run, so their calls took 380 ms of virtual time, 95
// calltimes, and their rows up to 23 s of CI's per kernel.
const icountMinCalls = 10

func measureRounds(budget Budget, v, base *Loop, callTime time.Duration, reset func()) (Result, error) {
	var kns, call []float64
	var remeasured, disagreed int
	stream := func(l *Loop, record bool) Stream {
		return func(size uint32) (float64, error) {
			s, err := l.Measure(size)
			if err != nil {
				if l == base {
					err = fmt.Errorf("baseline: %w", err)
				}
				return 0, err
			}
			remeasured += s.Restarts + s.Rejected
			if s.Disagreed {
				disagreed++
			}
			if record {
				kns = append(kns, float64(s.KernelNs))
				call = append(call, float64(s.FixedNs)/1e3)
			}
			return s.Ns, nil
		}
	}
	streams := []Stream{stream(v, true)}
	if base != nil {
		streams = append(streams, stream(base, false))
	}
	sz := loopSizing(callTime, v, base)
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
	rounds, err := Run(budget, sz, func() {
		// The warm-up's samples are not the benchmark's.
		kns, call, remeasured, disagreed = nil, nil, 0, 0
		reset()
	}, streams...)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Ns:         rounds.Location(0).Value,
		Cycles:     rounds.Cycles(0).Value,
		GHz:        rounds.GHz(0),
		KernelNs:   quantile(kns, LowQuantile),
		CallUs:     quantile(call, 0.5),
		Rounds:     rounds.Count(),
		Remeasured: remeasured,
		Disagreed:  disagreed,
	}
	if base != nil {
		r.HaveDelta = true
		r.Delta, r.Rel = rounds.Paired(0, 1), rounds.Relative(0, 1)
	}
	return r, nil
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
