package measure

import (
	"math"
	"testing"

	"bpfbench/bpf/probe"
)

// The machine's clock rate, measured after every call.
//
// A VM's host changes its cores' frequency by itself (turbo bins that
// depend on what else the host runs). On the Intel Xeon family 6 model 167
// KVM guest, a userspace chain of dependent operations timed once a
// second for a minute took 1.003, 1.056, 1.084 or 1.114 ns per step:
// discrete levels up to 11% apart, each lasting seconds. Every time the
// suite measures moves with them, the same program in two runs included,
// and no estimator of a time removes a level the whole run spent in.
// There is no PMU in such a guest to count cycles, so the suite times a
// chain of dependent register multiplications, three cycles each on every
// x86-64 core of the last fifteen years, on the measuring thread after
// every call of every stream (the rate changes every few tens of ms, a
// call takes a few ms), and reports each call's time in cycles of the rate
// it ran at (cycles/op). Not additions: that guest's core (AMX and
// AVX512-FP16 in its flags, so Golden Cove or later) folds chains of ADDs
// of an immediate in its renamer, and a chain of them ran at "20 GHz".

// chainCycles is the cycles of one mulChain iteration: eight dependent
// multiplications of three cycles each.
const chainCycles = 24

// chainIters is the length of the shorter of the two timed chains:
// 24000 cycles, 6 µs at 4 GHz.
const chainIters = 1000

// CycleNs is the length in ns of one cycle of the calling thread's CPU,
// timed on chains of dependent multiplications (mulChain): the best of
// three of a chain of N cycles is subtracted from the best of three of one
// of 2N, which cancels the clock reads' own cost. It is 0 where the suite has no such
// chain (on architectures other than amd64), or the clock did not advance.
func CycleNs() float64 {
	if !haveChain {
		return 0
	}
	best := [2]int64{math.MaxInt64, math.MaxInt64}
	for range 3 {
		for j, n := range [2]uint64{chainIters, 2 * chainIters} {
			t := ThreadCPU()
			mulChain(n)
			best[j] = min(best[j], ThreadCPU()-t)
		}
	}
	d := best[1] - best[0]
	if d <= 0 {
		return 0
	}
	return float64(d) / (chainCycles * chainIters)
}

// Cycles is stream s's cost per unit in cycles: each call's cost over the
// cycle length measured right after it, the median over the calls that
// have one (a chain whose clock did not advance has none). NaN when none
// has (see Sizing.Cycles and CycleNs).
//
// The median, not Location's low quantile: a time's errors only add (the
// low quantile finds the calls nothing slowed), but a call's cycles err
// both ways, since the host often changes the clock rate between a call
// and its chain (a third of 3 ms calls here saw a rate 1% or more
// away from the one right before them, about half each way), so the low
// tail is made of calls whose chain ran slower than they did. Over a
// minute of one-second windows of a held XDP_DROP loop (Intel Xeon 6/167
// KVM guest, Linux 6.18.44-fc-v857) the windows' 10th percentiles in
// cycles varied by 1.6%, their medians by 0.6% (docs/method.md).
func (r *Rounds) Cycles(s int) Estimate {
	var c []float64
	for i, cy := range r.cycleNs(s) {
		if cy > 0 {
			c = append(c, r.Ns[s][i]/cy)
		}
	}
	return median(c, r.Turn)
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
	return 1 / quantile(cys, 0.5) // NaN for none
}

// cycleNs is stream s's cycle lengths, nil unless every call has one.
func (r *Rounds) cycleNs(s int) []float64 {
	if s >= len(r.CycleNs) || len(r.CycleNs[s]) != r.Count() {
		return nil
	}
	return r.CycleNs[s]
}

// ReportCycles reports a cost in cycles (unit) and the clock rate it was
// measured at (core-ghz), where both were measured on a CPU that keeps
// time: an emulated CPU's cycles are nobody's.
func ReportCycles(b *testing.B, cycles, ghz float64, unit string) {
	b.Helper()
	if probe.Emulated() || math.IsNaN(cycles) || math.IsNaN(ghz) {
		return
	}
	b.ReportMetric(cycles, unit)
	b.ReportMetric(ghz, "core-ghz")
}

// pow3 is 3^k mod 2^64, what mulChain(k/8) returns.
func pow3(k uint64) uint64 {
	p := uint64(1)
	for range k {
		p *= 3
	}
	return p
}
