package measure

import (
	"testing"
	"time"

	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/mark"
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
	// Record is the run's record, which the engine tells what became of
	// each row, its flags and its diagnostics (nil: nobody keeps them).
	Record *Record
	// Anatomy is the run's log of its windows where the anatomy plugin
	// counts the run (nil elsewhere: mark.FromEnv).
	Anatomy *mark.Log
}

// diag reports a diagnostic of b's row: a figure that says how its
// headline figures were made, not what the row costs. Benchmark lines
// carry what people compare; diagnostics go to the run's record, which
// the suite writes beside the results (-bpfbench.diag). In an
// instruction-counting guest they stay on the line (Clocks.Report): such
// files are compared as exact counts, and tools read the kernel's count
// there to tell exact rows.
func (o BenchOptions) diag(b *testing.B, v float64, unit string) {
	b.Helper()
	if o.Clocks.Icount {
		o.Clocks.Report(b, v, unit)
		return
	}
	o.Record.Diagnose(b.Name(), v, unit)
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

// CallSizes are what a family's calls are made of, the one thing its
// streams tell the engine: the units of the warm-up call, the bounds of
// a measured call, and how many calls a stream may make in a row
// (a turn). Everything else about sizing comes from the
// BenchOptions (BenchOptions.callSizing).
type CallSizes struct {
	Warm, Min, Max uint32
	MaxTurn        int
}

// callSizing is how o sizes calls of u: to o.CallTime, timing the core's
// clock rate and load after every call (gauge.Read), except on an emulated
// CPU, whose cycles and load are nobody's; in an instruction-counting
// guest the floor of units stops at icountMinCalls calls' time.
func (o BenchOptions) callSizing(u CallSizes) sizing {
	sz := sizing{Warm: u.Warm, Min: u.Min, Max: u.Max, MaxTurn: u.MaxTurn, CallTime: o.CallTime}
	if !o.Emulated {
		sz.Cycles, sz.Contention = true, o.Contention
	}
	if o.Clocks.Icount {
		sz.MinTime = icountMinCalls * o.CallTime
	}
	return sz
}
