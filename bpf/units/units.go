// Package units is the vocabulary of the units the suite reports: their
// benchfmt metadata, and how a time unit reads in an instruction-counting
// guest. A leaf, so that the suite and the offline report share it
// without the report linking the suite's BPF machinery.
package units

import (
	"fmt"
	"strings"
)

// Lines is the benchfmt metadata of the custom units the suite reports,
// printed before the results (`Unit <name> <key>=<value>`).
var Lines = []string{
	"Unit ns/op assume=nothing",
	"Unit kernel-ns/op better=lower assume=nothing",
	"Unit delta-ns/op better=lower assume=nothing",
	"Unit delta-ci95-ns better=lower assume=nothing",
	"Unit call-us better=lower assume=nothing",
	// ns/op in cycles of the clock rate each round ran at, and that rate
	// (the multiplication chain): the figure to compare across runs on a host that
	// changes its frequency.
	"Unit cycles/op better=lower assume=nothing",
	"Unit core-ghz assume=nothing",
	// test_run rows: the median over the row's calls of the judge's
	// memory reference (gauge.Load[Memory]), higher while something else
	// on the host core takes its caches (docs/method.md#the-host-cores-caches).
	"Unit memory-load assume=nothing",
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
	// above MaxContended too few ran free for them to be the program's.
	"Unit contended-frac better=lower assume=nothing",
	// BenchmarkDispatcher: how many attached fillers' JIT images lie
	// below the measured program's, which sets its path through the
	// dispatcher's binary search.
	"Unit dispatcher-rank assume=exact",
}

// Diagnostic are the units that only ever go to the diagnostics file
// (measure.BenchOptions.diag): the figures that say how a row's figures were
// made. Their Unit lines belong there, not before the results.
var Diagnostic = map[string]bool{
	"kernel-ns/op": true, "call-us": true, "core-ghz": true, "memory-load": true, "delta-rel": true, "remeasured": true,
	"clock-disagree": true, "steal-frac": true, "gen-ns/pkt": true, "lost-pkts": true, "lost-frac": true,
	"rx-cpu-busy": true, "remote-cpu-busy": true, "remote-cpu-wait": true, "remote-bound": true,
	"remote-pps": true,
}

// Select is the Unit lines of Lines whose unit is (diag true) or is not
// (false) Diagnostic.
func Select(diag bool) []string {
	var out []string
	for _, l := range Lines {
		if f := strings.Fields(l); len(f) >= 2 && Diagnostic[f[1]] == diag {
			out = append(out, l)
		}
	}
	return out
}

// Counted names unit in instructions, as Report writes it and the
// claims report reads it back: each "ns" in it becomes "instrs" and each
// "us" "kinstrs". Units that are no time (counts, fractions, bytes) stay
// as they are; rates have no meaning (ok false).
func Counted(unit string) (string, bool) {
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

// The contention rule, as the suite writes it into a results file and
// the report reads it back (docs/method.md#contention).
const (
	// ContentionLabel is the configuration line that names the rule by
	// which a run's contended-frac was judged; ContentionRule the rule:
	// a call is contended when it ran slower with a reference that moved.
	// A file without the line was judged by the rule before it.
	ContentionLabel = "contention-rule"
	ContentionRule  = "slower-with-reference"
	// MaxContended is the contended share of a row's calls past which
	// fewer than a tenth of them ran free: too few for its figures to be
	// the program's.
	MaxContended = 0.9
)

// TooFewFree says why a row's run is left out, in the words every
// reader uses.
func TooFewFree() string {
	return fmt.Sprintf("too few free calls (contended-frac above %.1f)", MaxContended)
}

// IsControl says whether the sub-benchmark name is an A/A control row: a
// family's baseline measured against itself, one of its keys set to aa
// (BenchmarkXDP/prog=aa/size=64, BenchmarkDispatcher/dispatcher=aa/...).
// Its delta should be 0: an interval that covers 0 in about 95% of runs,
// and no instruction or event over its baseline.
func IsControl(name string) bool {
	for _, elem := range strings.Split(name, "/") {
		_, v, ok := strings.Cut(elem, "=")
		// The last value may carry go test's -GOMAXPROCS suffix.
		if i := strings.LastIndexByte(v, '-'); i >= 0 && strings.Trim(v[i+1:], "0123456789") == "" {
			v = v[:i]
		}
		if ok && v == "aa" {
			return true
		}
	}
	return false
}

// Header is the Unit lines a results file starts with: those of the units
// not Diagnostic where the clocks keep time (diagnostics go to their own
// file, with DiagHeader), and where they count instructions (icount) the
// units a time is reported in instead (Counted), diagnostics included.
func Header(icount bool) []string {
	if !icount {
		return Select(false)
	}
	var out []string
	for _, l := range Lines {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if u, ok := Counted(f[1]); ok {
			f[1] = u
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

// DiagHeader is the Unit lines of the diagnostics file: none where the
// clocks count instructions, as diagnostics then go on the results line.
func DiagHeader(icount bool) []string {
	if icount {
		return nil
	}
	return Select(true)
}
