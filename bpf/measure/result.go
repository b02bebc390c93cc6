package measure

import (
	"fmt"
	"math"
	"testing"

	"bpfbench/bpf/measure/robust"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/units"
)

// Result summarises the samples of one variant.
type Result struct {
	// Ns is the low quantile (robust.LowQuantile) of the variant's per-round
	// cost, KernelNs the same quantile of the kernel's own averages.
	Ns, KernelNs float64
	// Cycles is Ns in cycles of the clock rate each round ran at
	// (Rounds.Cycles), GHz the median rate (NaN where not measured).
	Cycles, GHz float64
	// Memory is the median memory reference (gauge.Load[Memory]) over
	// the calls Cycles comes from, NaN where the core's load was not
	// read: the state of the host core's caches while the row measured.
	Memory float64
	// CallUs is the median fixed cost of a test_run call: the median,
	// because softirq work that happens to land in one short call would
	// otherwise dominate the mean.
	CallUs float64
	// Delta is the median paired difference against the baseline with
	// its 95% interval; Rel the same as a fraction of the baseline.
	Delta, Rel robust.Estimate
	HaveDelta  bool
	// Calls is the variant's measured calls (Rounds.Count).
	Calls int
	// Remeasured counts measurements taken again: loops the kernel
	// abandoned on EINTR, and samples whose clocks disagreed.
	Remeasured int
	// Disagreed counts samples whose clocks still disagreed after
	// the loop's tries, kept and reported as such (clock-disagree).
	Disagreed int
	// Contended says how many of the calls ran slower with a reference
	// that moved, left out of the figures.
	Contended Contended
	// Samples are the rounds the figures come from (the uncontended
	// ones), for a row's own figures beyond these.
	Samples *Rounds
	// Steal is the share of the measuring CPU's time its vCPU was
	// stolen by the host while the row measured (NaN: no tick passed).
	Steal float64
	// Repeated says the row's figures were reported before: testing calls
	// the body of a Family row again as it ramps b.N, and each call
	// reports the same figures, but says what it says in words once.
	Repeated bool
}

// A Figure is one number a row reports: a metric on its benchmark line,
// or, for a unit units.Diagnostic names, a diagnostic, which goes to the
// run's diagnostics file (BenchOptions.diag). Every figure of every row is written by one reporter,
// report.
type Figure struct {
	Unit  string
	Value float64
}

// report is the one reporter of a row: the engine's figures, the row's
// own (Row.Report, which may also say things in words), contended-frac,
// and steal-frac where a tick passed; then the row's Check. A row reported again
// (Result.Repeated) says nothing in words again.
func report(b *testing.B, o BenchOptions, row Row, r Result, engine []Figure) {
	b.Helper()
	figs := engine
	if row.Report != nil {
		figs = append(figs, row.Report(b, r)...)
	}
	for _, f := range figs {
		if units.Diagnostic[f.Unit] {
			o.diag(b, f.Value, f.Unit)
		} else {
			o.Clocks.Report(b, f.Value, f.Unit)
		}
	}
	if r.Repeated {
		r.Contended.Metric(b)
	} else {
		r.Contended.Report(b, o.Record)
	}
	if !math.IsNaN(r.Steal) {
		o.diag(b, r.Steal, "steal-frac")
	}
	if row.Check != nil && !r.Repeated {
		o.Record.Require(b, row.Check(r), "check the row")
	}
}

// loopFigures are the engine's figures of loop v's Result: ns/op (sub-ns
// resolution, from thread CPU time), cycles/op and core-ghz where the
// clock rate was timed, kernel-ns/op (the kernel's truncated average),
// call-us (the fixed cost of one test_run call) and, with a baseline,
// delta-ns/op (the median paired difference v-base), its 95% half-width
// delta-ci95-ns and delta-rel (the difference as a fraction of base). It
// logs what they leave out unless r.Repeated.
func loopFigures(b *testing.B, rec *Record, v *testrun.Loop, r Result) []Figure {
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
				b.Logf("%v (kept: clock-disagree %d of %d calls)", err, r.Disagreed, r.Calls)
			}
			rec.Flag(b.Name(), err.Error())
		}
	}
	if r.Remeasured > 0 && !r.Repeated {
		b.Logf("%d measurements of %d calls were taken again (EINTR, or the clocks disagreed)", r.Remeasured, r.Calls)
	}
	figs := []Figure{{Unit: "ns/op", Value: r.Ns}}
	// A time in whole kernel ns has no cycles to speak of; an emulated
	// CPU's cycles are nobody's (NaN: BenchOptions.callSizing).
	if !v.KernelClock && !math.IsNaN(r.Cycles) && !math.IsNaN(r.GHz) {
		figs = append(figs, Figure{Unit: "cycles/op", Value: r.Cycles}, Figure{Unit: "core-ghz", Value: r.GHz})
		if !math.IsNaN(r.Memory) {
			figs = append(figs, Figure{Unit: "memory-load", Value: r.Memory})
		}
	}
	if kernelTimed {
		figs = append(figs, Figure{Unit: "kernel-ns/op", Value: r.KernelNs},
			Figure{Unit: "clock-disagree", Value: float64(r.Disagreed) / float64(max(r.Calls, 1))})
	}
	figs = append(figs, Figure{Unit: "call-us", Value: r.CallUs}, Figure{Unit: "remeasured", Value: float64(r.Remeasured)})
	// A delta between two loops timed by the kernel's whole-ns average
	// (KernelClock) is a truncation artifact, not a difference: none.
	if r.HaveDelta && !v.KernelClock {
		figs = append(figs, Figure{Unit: "delta-ns/op", Value: r.Delta.Value}, Figure{Unit: "delta-rel", Value: r.Rel.Value})
		if h := r.Delta.Half(); !math.IsInf(h, 0) {
			figs = append(figs, Figure{Unit: "delta-ci95-ns", Value: h})
		}
	}
	return figs
}

// checkKernel compares the suite's clock with the kernel's over all
// rounds (Measure already compared each sample): a disagreement means the
// suite measures something the kernel's loop does not, or the reverse, and
// no number from it can be trusted.
func (r Result) checkKernel() error {
	if !testrun.ClocksAgree(r.Ns, r.KernelNs) {
		return fmt.Errorf("suite measured %.2f ns/op but the kernel %.0f ns/op: clocks disagree", r.Ns, r.KernelNs)
	}
	return nil
}

// Contended says how much of a row's calls ran slower with a reference
// that moved (gauge.Contention.Judge, docs/method.md#contention).
type Contended struct {
	// Frac is the share of the rounds in which a call ran slower with
	// a reference that moved, left out of the figures.
	Frac float64
	// TooFewFree says more than units.MaxContended of the calls were
	// contended: the figures are of the few free ones.
	TooFewFree bool
	// Measured says the load was measured with every call.
	Measured bool
	// Calls is the calls of each stream, contended or not.
	Calls int
}

// Report reports contended-frac, where the load was measured, and says
// in the log and the run's record when too few calls ran free.
func (l Contended) Report(b *testing.B, rec *Record) {
	b.Helper()
	if !l.Measured {
		return
	}
	l.Metric(b)
	if l.TooFewFree {
		// With no free call left, the figures are of every call
		// (Rounds.Uncontended).
		of := "the few free ones"
		if l.Frac >= 1 {
			of = "all of them, none ran free"
		}
		b.Logf("contended: %.0f%% of %d calls ran slower with a reference that moved: the figures are of %s (docs/method.md#contention)", 100*l.Frac, l.Calls, of)
		rec.Flag(b.Name(), fmt.Sprintf("contended: %.0f%% of its calls, the figures are of %s", 100*l.Frac, of))
	}
}

// Metric reports contended-frac alone, where the load was measured: for
// a row whose body reports again what Report already said (Result.Repeated).
func (l Contended) Metric(b *testing.B) {
	if l.Measured {
		b.ReportMetric(l.Frac, "contended-frac")
	}
}

// OneIf is v as a figure: 1 or 0 (rx-bound, remote-bound).
func OneIf(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
