package measure

import (
	"math"
	"testing"

	"bpfbench/bpf/measure/robust"
)

// Cycles is stream s's cost per unit in cycles: each call's cost over the
// cycle length measured right after it, the median over the calls that
// have one (a chain whose clock did not advance has none). NaN when none
// has (see sizing.Cycles and gauge.Reading).
//
// The median, not Location's low quantile: a time's errors only add (the
// low quantile finds the calls nothing slowed), but a call's cycles err
// both ways, since the host often changes the clock rate between a call
// and its chain, so the low tail is made of calls whose chain ran slower
// than they did (docs/method.md#the-clock-rate-cyclesop).
func (r *Rounds) Cycles(s int) robust.Estimate {
	var c []float64
	for i, cy := range r.cycleNs(s) {
		if cy > 0 {
			c = append(c, r.Ns[s][i]/cy)
		}
	}
	return robust.Median(c, r.Turn)
}

// GHz is the median clock rate stream s ran at (1/CycleNs), NaN without
// one.
func (r *Rounds) GHz(s int) float64 {
	var cys []float64
	for _, cy := range r.cycleNs(s) {
		if cy > 0 {
			cys = append(cys, cy)
		}
	}
	return 1 / robust.Quantile(cys, 0.5) // NaN for none
}

// cycleNs is stream s's cycle lengths, nil unless every call has one.
func (r *Rounds) cycleNs(s int) []float64 {
	if s >= len(r.CycleNs) || len(r.CycleNs[s]) != r.Count() {
		return nil
	}
	return r.CycleNs[s]
}

// ReportCycles reports a cost in cycles (unit) and the clock rate it was
// measured at (core-ghz, a diagnostic), where both were measured (not on
// an emulated CPU, whose cycles are nobody's: BenchOptions.callSizing).
func (c Clocks) ReportCycles(b *testing.B, cycles, ghz float64, unit string) {
	b.Helper()
	if math.IsNaN(cycles) || math.IsNaN(ghz) {
		return
	}
	b.ReportMetric(cycles, unit)
	c.Diag(b, ghz, "core-ghz")
}
