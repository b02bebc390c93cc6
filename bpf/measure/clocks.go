package measure

import (
	"math"
	"testing"

	"bpfbench/bpf/units"
)

// Clocks says what the machine's clocks count: time, or in an
// instruction-counting guest (QEMU's -icount) instructions, every clock
// advancing 2^Shift ns per instruction. The benchmarks learn it once
// (probe.Icount) and give it to the engine in BenchOptions: the engine
// does not probe the machine. (It reads testing's -test.bench and
// -test.benchtime: BenchTime; pattern.Selected reads -test.bench.)
type Clocks struct {
	Icount bool
	Shift  int
}

// Report is b.ReportMetric in the units of what the clocks count. Where
// they keep time it is b.ReportMetric. Where they count instructions a
// time is a number of instructions: the unit says so (ns/op becomes
// instrs/op, delta-ns/prog delta-instrs/prog, call-us call-kinstrs) and
// the value is divided by 2^Shift; Go's own ns/op is suppressed, and
// rates (pps, calls/s), which would be per virtual second, are not
// reported.
func (c Clocks) Report(b *testing.B, v float64, unit string) {
	b.Helper()
	if !c.Icount {
		b.ReportMetric(v, unit)
		return
	}
	if unit == "ns/op" {
		b.ReportMetric(0, unit)
		if v == 0 {
			return // suppressing the built-in, as b.ReportMetric does
		}
	}
	if u, ok := units.Counted(unit); ok {
		b.ReportMetric(v/math.Exp2(float64(c.Shift)), u)
	}
}
