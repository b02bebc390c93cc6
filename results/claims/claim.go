package claims

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"
)

// A Change is what a shape claim expects of a path's instruction count.
type Change int

// The changes a shape claim may expect.
const (
	Shorter   Change = iota // the newer kernel's path is shorter
	Unchanged               // it stays within ±4%
	Longer                  // the path gets longer (a check added)
)

// String is the change as the report names it.
func (c Change) String() string {
	switch c {
	case Unchanged:
		return "unchanged"
	case Longer:
		return "longer"
	}
	return "shorter"
}

// A Claim is a published figure and how this suite measures it.
type Claim struct {
	ID        string
	Text      string
	Published Published
	Measure   Measure
	// Same lists labels the files of a cross-boot claim must share, so
	// that only the boot option in question differs.
	Same []string
	// Shape, for a claim that also says which way a path's length goes,
	// judges that from instruction-count files (virt: tcg-icount).
	Shape *Shape
	// Info, for a claim without a published figure, says what a file's
	// labels mean for it; the claim has no Measure.
	Info func(*benchfile.File) string
}

// A Shape is the direction a claim gives a path's instruction count,
// newer kernel (Measure.A) minus older (Measure.B).
type Shape struct {
	Change  Change
	Measure Measure
	Same    []string
}

// Published is a published figure converted to ns per packet or call,
// with the range its source allows.
type Published struct {
	Value, Lo, Hi float64
	Unit          string // ns/pkt, ns/call, ns/op
	From          string // the published figures
	Why           string // the conversion and the range
}

// Measure is the quantity measured here: A, or A - B.
type Measure struct {
	What string
	A, B Sel
	Note string
}

// Sels are the selections of the measure: A, or A and B.
func (m Measure) Sels() []Sel {
	if m.A.Family == "" {
		return nil
	}
	if m.B.Family == "" {
		return []Sel{m.A}
	}
	return []Sel{m.A, m.B}
}

// A Sel selects one metric of one sub-benchmark, across its runs, in the
// file whose labels satisfy Boot (any file when Boot is nil).
type Sel struct {
	benchfile.Sel
	Boot *Boot
}

// sel parses "BenchmarkFamily/key=value/..." and a unit.
func sel(name, unit string) Sel {
	return Sel{Sel: benchfile.Sel{Name: benchfile.ParseName(name), Unit: unit}}
}

func (s Sel) on(b *Boot) Sel { s.Boot = b; return s }

// A Boot is a kernel configuration a measurement needs, recognised from
// the labels a results file starts with.
type Boot struct {
	Name   string   // "a mitigations=off boot"
	Labels []string // the labels Test reads
	Test   func(*benchfile.File) bool
}

var (
	retpolines = &Boot{Name: "a boot with retpolines", Labels: []string{"retpoline"}, Test: func(f *benchfile.File) bool {
		return f.Label("retpoline") == "on"
	}}
	mitigationsOff = &Boot{Name: "a mitigations=off boot", Labels: []string{"mitigations"}, Test: func(f *benchfile.File) bool {
		first, _, _ := strings.Cut(f.Label("mitigations"), ",")
		return first == "off"
	}}
	cfiOn = &Boot{Name: "a kCFI or FineIBT kernel", Labels: []string{"cfi"}, Test: func(f *benchfile.File) bool {
		v := f.Label("cfi")
		return v == "kcfi" || v == "fineibt"
	}}
	cfiOff = &Boot{Name: "a kernel without CFI", Labels: []string{"cfi"}, Test: func(f *benchfile.File) bool {
		return f.Label("cfi") == "off"
	}}
	// The UDP 4-tuple hash was merged for Linux 6.13.
	udpHash   = kernelFrom(6_013, "a kernel with the UDP 4-tuple hash (6.13 or later)")
	noUDPHash = kernelBefore(6_013, "a kernel without the UDP 4-tuple hash (before 6.13)")
	// The trampoline's jmp mode was merged for Linux 6.19. A timing
	// verdict takes real kernels only (Evaluate leaves emulated files
	// out); a shape verdict instruction-count files only.
	jmpKernel  = kernelFrom(6_019, "a real (not emulated) kernel with the trampoline's jmp mode (6.19 or later)")
	callKernel = kernelBefore(6_019, "a real (not emulated) kernel without the trampoline's jmp mode (before 6.19)")
	icountJmp  = icount(kernelFrom(6_019, "an instruction-count file (virt: tcg-icount) of a kernel with jmp mode (6.19 or later)"))
	icountCall = icount(kernelBefore(6_019, "an instruction-count file (virt: tcg-icount) of a kernel without jmp mode (before 6.19)"))
	// A boot with the default mitigations (claim 9.1).
	mitigationsDefault = &Boot{Name: "a boot with the default mitigations", Labels: []string{"mitigations"}, Test: func(f *benchfile.File) bool {
		return f.Label("mitigations") == "default"
	}}
	// fsession was merged for Linux 7.0, tracing multi-links are in 7.3.
	fsessionKernel = kernelFrom(7_000, "a real kernel with fsession (7.0 or later)")
	multiOff       = both(kernelFrom(7_003, "a kernel with tracing multi-links (7.3)"), mitigationsOff)
	icountFsession = icount(kernelFrom(7_000, "an instruction-count file (virt: tcg-icount) of a kernel with fsession (7.0 or later)"))
	icountMulti    = icount(kernelFrom(7_003, "an instruction-count file (virt: tcg-icount) of a kernel with tracing multi-links (7.3)"))
	icountAny      = icount(&Boot{Name: "an instruction-count file (virt: tcg-icount)", Test: func(*benchfile.File) bool { return true }})
)

// both is a boot that is a and b.
func both(a, b *Boot) *Boot {
	return &Boot{Name: a.Name + ", " + b.Name, Labels: append(slices.Clone(a.Labels), b.Labels...), Test: func(f *benchfile.File) bool {
		return a.Test(f) && b.Test(f)
	}}
}

// kernelFrom is a kernel of version v (major*1000+minor) or later.
func kernelFrom(v int, name string) *Boot {
	return &Boot{Name: name, Labels: []string{"kernel"}, Test: func(f *benchfile.File) bool {
		k, ok := kernelVersion(f.Label("kernel"))
		return ok && k >= v
	}}
}

// kernelBefore is a kernel older than version v.
func kernelBefore(v int, name string) *Boot {
	return &Boot{Name: name, Labels: []string{"kernel"}, Test: func(f *benchfile.File) bool {
		k, ok := kernelVersion(f.Label("kernel"))
		return ok && k < v
	}}
}

// counted is the shape a claim's timing Measure gives in instruction-count
// files: the same rows, in the units those files report (delta-ns/op is
// delta-instrs/op there), on boots a and b. Set after the claim's Measure
// (see init).
func counted(change Change, what string, a, b *Boot) *Shape {
	return &Shape{Change: change, Measure: Measure{What: what, A: Sel{Boot: a}, B: Sel{Boot: b}}}
}

func init() {
	for i := range All {
		c := &All[i]
		if c.Shape == nil || c.Shape.Measure.A.Unit != "" {
			continue
		}
		m := &c.Shape.Measure
		for _, p := range []struct{ shape, timing *Sel }{{&m.A, &c.Measure.A}, {&m.B, &c.Measure.B}} {
			p.shape.Name, p.shape.Unit = p.timing.Name, benchfile.CountedUnit(p.timing.Unit)
		}
	}
}

// icount restricts b to instruction-count files.
func icount(b *Boot) *Boot {
	test := b.Test
	return &Boot{Name: b.Name, Labels: append(slices.Clone(b.Labels), "virt"), Test: func(f *benchfile.File) bool {
		return f.Icount() && test(f)
	}}
}

// itsInfo says what a file's its label means for BPF (claim 8.1).
func itsInfo(f *benchfile.File) string {
	v, ok := f.Config["its"]
	switch {
	case !ok:
		return "no its label (written before the suite recorded it, or by a kernel without the ITS report)"
	case strings.HasPrefix(v, "Not affected"):
		return "its: " + v + ": no thunk on any row"
	case strings.Contains(v, "Aligned branch/return thunks"):
		what := "every return of a JIT'd program and of the kernel goes through its_return_thunk, and the JIT's indirect jumps (tail calls) through its_static_thunk"
		if f.Label("retpoline") == "on" {
			what = "every return of a JIT'd program and of the kernel goes through its_return_thunk; indirect branches stay retpolines (retpoline: on), so tail calls and the indirect call to bpf_func are as without ITS"
		}
		return "its: " + v + ": " + what + "; every row's ns/op includes it, a paired delta only where the variant adds returns (bpf2bpf calls, trampolines and the programs they call)"
	case strings.Contains(v, "Stuffing"):
		return "its: " + v + ": mitigated by call depth tracking (call-depth-tracking: " + f.Label("call-depth-tracking") + "): every call and return is counted"
	case strings.HasPrefix(v, "Vulnerable"):
		return "its: " + v + ": affected, not mitigated: no thunk on any row"
	}
	return "its: " + v
}

// kernelVersion turns "6.18.44-fc-v782" into 6018.
func kernelVersion(s string) (int, bool) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return major*1000 + minor, true
}

// MppsDelta converts two packet rates in Mpps into the difference of their
// per-packet times in ns, (1/a - 1/b) * 1000: how much longer a packet
// takes at rate a than at rate b. The conversion the dispatcher thread's
// reviewer used: 22.0 -> 29.4 Mpps saves 11.4 ns per packet.
func MppsDelta(a, b float64) float64 { return (1/a - 1/b) * 1000 }

// RateNoise is the run-to-run noise of a published packet rate: "A +4%
// at 30 Mpps is ~1.2 ns and may be noise" (docs/claims.md §1).
const RateNoise = 0.04

// mpps is the per-packet difference between rates a and b (in Mpps),
// known to +-4% of the mean per-packet time.
func mpps(a, b float64, from string) Published {
	v := MppsDelta(a, b)
	tol := RateNoise * (1000/a + 1000/b) / 2
	return Published{v, v - tol, v + tol, "ns/pkt", from,
		fmt.Sprintf("(1/%g - 1/%g) * 1000 = %.2f ns; +-%.0f%% of the %.1f ns per packet: rates this close may be noise",
			a, b, v, 100*RateNoise, (1000/a+1000/b)/2)}
}

// triggers is the change in time per trigger when the selftests' trigger
// benchmark goes from rate b to rate a (millions of triggers per second):
// 1000/a - 1000/b ns, negative for a speed-up, known to +-4% of the mean
// time per trigger like a packet rate.
func triggers(a, b float64, from string) Published {
	v := MppsDelta(a, b)
	mean := (1000/a + 1000/b) / 2
	tol := RateNoise * mean
	return Published{v, v - tol, v + tol, "ns/call", from,
		fmt.Sprintf("1000/%g - 1000/%g = %.2f ns per trigger; +-%.0f%% of the %.2f ns mean time per trigger, as for a rate",
			a, b, v, 100*RateNoise, mean)}
}

// rated is the difference of two per-event times derived from
// throughputs (the selftests bench reports M events/s), known to +-4% of
// their mean like a packet rate.
func rated(t, base float64, from string) Published {
	v := t - base
	tol := RateNoise * (t + base) / 2
	return Published{v, v - tol, v + tol, "ns/call", from,
		fmt.Sprintf("%g - %g = %.1f ns; +-%.0f%% of the mean per-call time, as for a rate", t, base, v, 100*RateNoise)}
}

// truncated is a single whole-ns test_run average: the kernel truncates
// (do_div), so the true value lies in [v, v+1).
func truncated(v float64, from string) Published {
	return Published{v, v, v + 1, "ns/op", from, fmt.Sprintf("a whole-ns average, truncated: %g to %g", v, v+1)}
}

// truncDiff is a sum or difference of n whole-ns test_run averages: each
// is truncated, so the result is known to +-n/2 ns.
func truncDiff(v float64, n int, from string) Published {
	tol := float64(n) / 2
	return Published{v, v - tol, v + tol, "ns/call", from,
		fmt.Sprintf("%d whole-ns figures, each truncated: +-%g ns", n, tol)}
}

// noEffect is a claim that a change costs nothing measurable, for a
// measurement of per-event time t: allowed is what the source could not
// have seen, +-4% of t.
func noEffect(t float64, from string) Published {
	tol := RateNoise * t
	return Published{0, -tol, tol, "ns/call", from,
		fmt.Sprintf("no effect: within +-%.0f%% of the %s ns per call", 100*RateNoise, stat.FormatTrim(t))}
}
