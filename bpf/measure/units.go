package measure

import (
	"math"
	"strings"
	"testing"

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
	// ns/op in cycles of the clock rate each round ran at, and that rate
	// (measure.CycleNs): the figure to compare across runs on a host that
	// changes its frequency.
	"Unit cycles/op better=lower assume=nothing",
	"Unit core-ghz assume=nothing",
	// BenchmarkMitigations: the JIT image size (hardening grows it).
	"Unit jited-bytes better=lower assume=nothing",
	// BenchmarkCall: delta-ns/op per call or tail call.
	"Unit ns/call better=lower assume=nothing",
	// BenchmarkTrampoline: delta-ns/op per attached or chained program.
	"Unit delta-ns/prog better=lower assume=nothing",
	// BenchmarkAttach: real frames through XDP on a device.
	// pps: a real NIC's measured rate; capacity-pps: 1e9 over the CPU
	// time per packet of the rig's generating CPU, the rate that CPU
	// could sustain, not a rate anything was measured at.
	"Unit pps better=higher assume=nothing",
	"Unit capacity-pps better=higher assume=nothing",
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
	// Every family: the paired difference as a fraction of the baseline
	// in the same round, and the measurements taken again.
	"Unit delta-rel better=lower assume=nothing",
	"Unit remeasured better=lower assume=exact",
	"Unit clock-disagree better=lower assume=nothing",
	// The share of the measuring CPU's time the host stole from its vCPU
	// while the row measured (/proc/stat).
	"Unit steal-frac better=lower assume=nothing",
	// The share of a row's calls made while something else took the
	// measuring core's throughput (Contention), left out of its figures;
	// above 0.9 the figures are of all calls.
	"Unit contended-frac better=lower assume=nothing",
	// BenchmarkDispatcher: how many attached fillers' JIT images lie
	// below the measured program's, which sets its path through the
	// dispatcher's binary search.
	"Unit dispatcher-rank assume=exact",
}

// Report is b.ReportMetric in the units of what the clocks count. Where
// they keep time it is b.ReportMetric. In an instruction-counting guest
// (probe.Icount: every clock advances 2^shift ns per instruction) a time
// is a number of instructions: the unit says so (ns/op becomes instrs/op,
// delta-ns/prog delta-instrs/prog, call-us call-kinstrs) and the value is
// divided by 2^shift; Go's own ns/op is suppressed, and rates (pps,
// calls/s), which would be per virtual second, are not reported.
func Report(b *testing.B, v float64, unit string) {
	b.Helper()
	shift, ok := probe.Icount()
	if !ok {
		b.ReportMetric(v, unit)
		return
	}
	if unit == "ns/op" {
		b.ReportMetric(0, unit)
		if v == 0 {
			return // suppressing the built-in, as b.ReportMetric does
		}
	}
	if u, ok := CountedUnit(unit); ok {
		b.ReportMetric(v/math.Exp2(float64(shift)), u)
	}
}

// Diag reports a diagnostic of b's row: a figure that says how its
// headline figures were made (the clock rate, the kernel's own average,
// the fixed cost of a call, the calls measured again, the stolen time),
// not what the row costs. Benchmark lines carry what people compare;
// diagnostics go to the run's diagnostics (probe.Diagnose), which the
// suite writes beside the results (-bpfbench.diag). In an
// instruction-counting guest they stay on the line (as Report writes it):
// such files are compared as exact counts, and tools read the kernel's
// count there to tell exact rows.
func Diag(b *testing.B, v float64, unit string) {
	b.Helper()
	if _, ok := probe.Icount(); ok {
		Report(b, v, unit)
		return
	}
	probe.Diagnose(b, v, unit)
}

// CountedUnit names unit in instructions, as Report writes it and the
// claims report reads it back: each "ns" in it becomes "instrs" and each
// "us" "kinstrs". Units that are no time (counts, fractions, bytes) stay
// as they are; rates have no meaning (ok false).
func CountedUnit(unit string) (string, bool) {
	if strings.HasSuffix(unit, "/s") || strings.HasSuffix(unit, "pps") {
		return "", false
	}
	parts := strings.FieldsFunc(unit, func(r rune) bool { return r == '-' || r == '/' })
	seps := strings.FieldsFunc(unit, func(r rune) bool { return r != '-' && r != '/' })
	var sb strings.Builder
	for i, p := range parts {
		switch p {
		case "ns":
			p = "instrs"
		case "us":
			p = "kinstrs"
		}
		sb.WriteString(p)
		if i < len(seps) {
			sb.WriteString(seps[i])
		}
	}
	return sb.String(), true
}

// UnitLines is the benchfmt metadata of Units (`Unit <name> <key>=<value>`)
// for the machine at hand: in an instruction-counting guest the units it
// reports instead (see Report).
func UnitLines() []string {
	if _, ok := probe.Icount(); !ok {
		return Units
	}
	var out []string
	for _, l := range Units {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if u, ok := CountedUnit(f[1]); ok {
			f[1] = u
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}
