package measure

import (
	"fmt"
	"testing"

	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/probe"
)

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

// Streams measures streams once a run (OncePinned) for o.Budget(), on a thread pinned
// to o.CPU, in rounds sized by u and o: the front door for streams that
// are not test_run loops (Family's), such as the traffic rigs' frames.
// reset runs once the warm-up is done, after b's timer is reset. The
// Contended says how many of the calls ran on a contended core; the rounds
// returned are those that did not (all of them when too few did not).
func Streams(b *testing.B, o BenchOptions, u CallSizes, reset func(), streams ...Stream) (*Rounds, Contended, error) {
	b.Helper()
	var r *Rounds
	err := o.Clocks.OncePinned(b, o.CPU, func() error {
		var err error
		r, err = run(o.Budget(), o.callSizing(u), func() {
			b.ResetTimer()
			if reset != nil {
				reset()
			}
		}, streams...)
		return err
	})
	if err != nil {
		return nil, Contended{}, err
	}
	u2, l := r.clean(o.Contention.Threshold())
	return u2, l, nil
}

// Contended says how much of a row's calls ran on a contended core
// (gauge.Contention, docs/method.md#contention).
type Contended struct {
	// Frac is the share of the calls made while the core was
	// contended, left out of the figures.
	Frac float64
	// Uncontended is false when too many calls were contended for the
	// rest to make the figures: they are then of the least contended
	// tenth.
	Uncontended bool
	// Measured says the load was measured with every call.
	Measured bool
	// Calls is the calls of each stream, contended or not.
	Calls int
}

// clean is r's uncontended calls (Uncontended) and how many were left out.
func (r *Rounds) clean(threshold gauge.Load) (*Rounds, Contended) {
	u, contended, ok := r.Uncontended(threshold)
	n := r.Count()
	return u, Contended{Frac: contended, Uncontended: ok, Calls: n,
		Measured: n > 0 && len(r.Load) > 0 && len(r.Load[0]) == n}
}

// Report reports contended-frac, where the load was measured, and says
// in the log and the run summary when the figures are of contended calls.
func (l Contended) Report(b *testing.B) {
	b.Helper()
	if !l.Measured {
		return
	}
	l.Metric(b)
	if !l.Uncontended {
		b.Logf("contended: %.0f%% of %d calls ran on a contended core, too many to leave out: the figures are of the least contended tenth (docs/method.md#contention)", 100*l.Frac, l.Calls)
		probe.Flag(b, fmt.Sprintf("contended: %.0f%% of its calls, the figures are of the least contended tenth", 100*l.Frac))
	}
}

// Metric reports contended-frac alone, where the load was measured: for
// a row whose body reports again what Report already said (Result.Repeated).
func (l Contended) Metric(b *testing.B) {
	if l.Measured {
		b.ReportMetric(l.Frac, "contended-frac")
	}
}
