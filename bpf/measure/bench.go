package measure

import (
	"fmt"
	"testing"
	"time"

	"github.com/aclements/go-moremath/stats"

	"bpfbench/bpf/probe"
)

// Units is the benchfmt metadata of the custom units the suite reports,
// printed before the results (`Unit <name> <key>=<value>`).
var Units = []string{
	"Unit ns/op assume=nothing",
	"Unit kernel-ns/op better=lower assume=nothing",
	"Unit delta-ns/op better=lower assume=nothing",
	"Unit delta-ci95-ns better=lower assume=nothing",
	"Unit call-us better=lower assume=nothing",
	// BenchmarkMitigations: the JIT image size (hardening grows it).
	"Unit jited-bytes better=lower assume=nothing",
	// BenchmarkCall: delta-ns/op per call or tail call.
	"Unit ns/call better=lower assume=nothing",
	// BenchmarkTrampoline: delta-ns/op per attached or chained program.
	"Unit delta-ns/prog better=lower assume=nothing",
	// BenchmarkAttach: real frames through XDP on a device.
	"Unit pps better=higher assume=nothing",
	"Unit ns/pkt better=lower assume=nothing",
	"Unit gen-ns/pkt better=lower assume=nothing",
	"Unit rx-ns/pkt better=lower assume=nothing",
	"Unit rx-ci95-ns better=lower assume=nothing",
	"Unit delta-ns/pkt better=lower assume=nothing",
	"Unit lost-pkts better=lower assume=exact",
	"Unit lost-frac better=lower assume=nothing",
	"Unit rx-bound better=higher assume=exact",
	"Unit rx-cpu-busy assume=nothing",
	// BenchmarkAFXDP, BenchmarkCpumap, BenchmarkUDP: the stage on the other
	// CPU (the AF_XDP application, the cpumap kthread, the UDP receiver).
	"Unit remote-ns/pkt better=lower assume=nothing",
	"Unit remote-pps better=higher assume=nothing",
	"Unit remote-cpu-busy assume=nothing",
	"Unit remote-cpu-wait better=lower assume=nothing",
	"Unit remote-bound better=higher assume=exact",
	"Unit calls/s better=higher assume=nothing",
}

// BenchOptions control how a Loop is benchmarked.
type BenchOptions struct {
	// CPU the measuring thread is pinned to.
	CPU int
	// CallTime is the target duration of one long test_run call. Long
	// enough that the fixed per-call cost is small next to it, short enough
	// that the machine's speed rarely changes inside one call.
	CallTime time.Duration
	// Interleave measures a variant and its baseline in alternating rounds.
	Interleave bool
}

// Result summarises the samples of one variant.
type Result struct {
	Ns, KernelNs float64
	// CallUs is the median fixed cost of a test_run call: the median,
	// because softirq work that happens to land in one short call would
	// otherwise dominate the mean.
	CallUs float64
	// Delta is the mean per-round paired difference against the baseline,
	// DeltaCI95 its 95% confidence half-width (Student's t over rounds).
	Delta, DeltaCI95 float64
	HaveDelta        bool
	Rounds           int
	// Remeasured counts measurements taken again: loops the kernel
	// abandoned on EINTR, and samples whose clocks disagreed.
	Remeasured int
}

// Bench measures loop v for b.N repetitions and reports ns/op (sub-ns
// resolution, from thread CPU time), kernel-ns/op (the kernel's truncated
// average) and call-us (the fixed cost of one test_run call). With a base
// and o.Interleave it measures base and v in alternating rounds, order
// swapped every round, and also reports delta-ns/op, the mean paired
// difference v-base, with delta-ci95-ns, its 95% confidence half-width.
func Bench(b *testing.B, v, base *Loop, o BenchOptions) Result {
	b.Helper()
	if !o.Interleave {
		base = nil
	}
	var r Result
	err := Pinned(o.CPU, func() error {
		var err error
		r, err = measureRounds(b.N, v, base, o.CallTime, b.ResetTimer)
		return err
	})
	probe.Require(b, err, "measure test_run loop")
	// A loop that repeats inside the program (Loop.Iterations) is not
	// timed by the kernel: there is no kernel average to compare with.
	kernelTimed := v.Iterations == nil
	if kernelTimed {
		if err := r.checkKernel(); err != nil {
			if !probe.Emulated() {
				b.Fatal(err)
			}
			// Both numbers are reported; neither is a measurement.
			b.Logf("%v (not fatal: the CPU is emulated, virt: tcg)", err)
		}
	}
	if r.Remeasured > 0 {
		b.Logf("%d of %d rounds' measurements were taken again (EINTR, or the clocks disagreed)", r.Remeasured, r.Rounds)
	}
	b.ReportMetric(r.Ns, "ns/op")
	if kernelTimed {
		b.ReportMetric(r.KernelNs, "kernel-ns/op")
	}
	b.ReportMetric(r.CallUs, "call-us")
	if r.HaveDelta {
		b.ReportMetric(r.Delta, "delta-ns/op")
		if r.Rounds > 1 {
			b.ReportMetric(r.DeltaCI95, "delta-ci95-ns")
		}
	}
	return r
}

// loopSizing sizes a test_run loop's long call: at least minRepeat
// repetitions, so that the short call's fixed cost never dominates.
func loopSizing(callTime time.Duration, v, base *Loop) Sizing {
	sz := Sizing{Warm: 10000, Min: 100_000, Max: 1 << 26, CallTime: callTime}
	if v.Iterations != nil || (base != nil && base.Iterations != nil) {
		sz.Max = MaxIterations
	}
	return sz
}

func measureRounds(n int, v, base *Loop, callTime time.Duration, reset func()) (Result, error) {
	var kns, call []float64
	var remeasured int
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
	rounds, err := Run(n, loopSizing(callTime, v, base), func() {
		// The warm-up's samples are not the benchmark's.
		kns, call, remeasured = nil, nil, 0
		reset()
	}, streams...)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Ns:         rounds.Mean(0),
		KernelNs:   stats.Mean(kns),
		CallUs:     stats.Sample{Xs: call}.Quantile(0.5),
		Rounds:     rounds.Count(),
		Remeasured: remeasured,
	}
	if base != nil {
		r.HaveDelta = true
		r.Delta, r.DeltaCI95 = rounds.Paired(0, 1)
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
