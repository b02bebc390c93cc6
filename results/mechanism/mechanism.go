// Package mechanism judges the published claims by their mechanism, from
// anatomy files (tools/anatomy, docs/icount.md#anatomy): whether a run
// executes the thunk, the check or the unbalanced return that a claim is
// about, as many times per repetition as docs/claims.md#mechanisms-what-the-anatomy-must-count
// says it must. A count is in mechanism within Tolerance of the expected
// whole number.
package mechanism

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"bpfbench/results/benchfile"
)

// Tolerance is how far a count may lie from the expected one.
const Tolerance = 0.05

// A Rule is one expected count: of Unit on Row, in one file whose labels
// match (Single), as the difference of two rows of one file (Rows), or
// as the difference of two files (Pair).
type Rule struct {
	IDs  string
	Row  string
	Unit string
	// Single: a file whose label Label is Value (or starts with it and a
	// space), or with Has, holds Has; Want is the count, or with WantUnits
	// the sum of those units on the same row.
	Label, Value, Has string
	WantUnits         []string
	// Pair: two files, A minus B (CFI: A's cfi is kcfi, B's off, one
	// release; Kernels: A from 6.19 on, B before, both of one cfi and
	// retpoline). WantA and WantB, when Kernels, are each file's own count.
	Pair         pairing
	Want         float64
	WantA, WantB float64
	// Of, for a Rows rule, is the row Row is held against: Row's count
	// minus Of's, in each file the labels match.
	Of string
	// LabelB and HasB, for a Boots rule, tell B's file as Label and Has
	// tell A's: two boots of one kernel on one QEMU CPU model, A minus B,
	// against Want or, with WantUnits, the sum of those units on A's row.
	LabelB, HasB string
	// Beside, for a Kernels or Rows rule, are rows or units printed next
	// to it without a verdict.
	Beside []string
	// Needs says what file the rule needs, for the report's "needs".
	Needs string
}

type pairing int

const (
	Single pairing = iota
	CFI
	Kernels
	Rows
	Boots
)

const (
	k0Row          = "BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp"
	fentryRow      = "BenchmarkTrampoline/target=helper/attach=fentry/progs=1"
	statsRow       = "BenchmarkMitigations/prog=drop/stats=on/harden=0/spec=none"
	bootMatrixNeed = "anatomies of BenchmarkTrampoline on a boot pair of one CPU model (tools/bootmatrix KERNEL "
)

// Rules are docs/claims.md's tables of mechanisms.
var Rules = []Rule{
	{IDs: "1.1, 1.5", Row: "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", Unit: "delta-retpolines/op",
		Label: "retpoline", Value: "on", Want: 1, Needs: "an anatomy of a boot with retpolines (make vmbench ANATOMY=1)"},
	{IDs: "1.1, 1.5", Row: "BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp", Unit: "retpolines/op",
		Label: "retpoline", Value: "on", Want: 0, Needs: "an anatomy of a boot with retpolines (make vmbench ANATOMY=1)"},
	{IDs: "1.4, 1.5", Row: "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", Unit: "delta-retpolines/op",
		Label: "retpoline", Value: "off", Want: 0, Needs: "an anatomy of a mitigations=off boot (make vmbench ANATOMY=1 VMEXEC_CMDLINE=mitigations=off)"},
	{IDs: "1.4, 1.5", Row: "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", Unit: "delta-icalls/op",
		Label: "retpoline", Value: "off", Want: 1, Needs: "an anatomy of a mitigations=off boot (make vmbench ANATOMY=1 VMEXEC_CMDLINE=mitigations=off)"},
	{IDs: "2.1", Row: "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", Unit: "delta-kcfi-checks/op",
		Pair: CFI, Want: 1, Needs: "anatomies of the kCFI pair (make kcfi-kernels; make vmbench KERNEL=6.12-kcfi ANATOMY=1, and 6.12-nocfi)"},
	{IDs: "2.2", Row: "BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp", Unit: "kcfi-checks/op",
		Pair: CFI, Want: 0, Needs: "anatomies of the kCFI pair"},
	{IDs: "2.3", Row: "BenchmarkDispatcher/dispatcher=full/fill=native/prog=xdp", Unit: "delta-kcfi-checks/op",
		Pair: CFI, Want: 0, Needs: "anatomies of the kCFI pair"},
	{IDs: "6.1", Row: "BenchmarkTrampoline/target=helper/attach=fexit/progs=1", Unit: "delta-calls-rets/op",
		Pair: Kernels, WantA: 0, WantB: 1, Beside: []string{"BenchmarkTrampoline/target=xdp/attach=fexit/progs=1"},
		Needs: "anatomies of BenchmarkTrampoline on a kernel before 6.19 and one from 6.19 on"},
	{IDs: "6.2", Row: "BenchmarkTrampoline/target=kfunc/attach=fmod_ret/progs=1", Unit: "delta-calls-rets/op",
		Pair: Kernels, WantA: 0, WantB: 1,
		Needs: "anatomies of BenchmarkTrampoline on a kernel before 6.19 and one from 6.19 on"},
	{IDs: "6.3", Row: "BenchmarkTrampoline/target=helper/attach=fentry/progs=1", Unit: "delta-calls-rets/op",
		Pair: Kernels, WantA: 0, WantB: 0, Beside: []string{"BenchmarkTrampoline/target=xdp/attach=fentry/progs=1"},
		Needs: "anatomies of BenchmarkTrampoline on a kernel before 6.19 and one from 6.19 on"},
	{IDs: "8.1", Row: k0Row, Unit: "bare-rets/op", Label: "its", Has: "Aligned branch/return thunks", Want: 0,
		Needs: "an anatomy of an ITS boot (tools/bootmatrix KERNEL its)"},
	{IDs: "8.1", Row: "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", Unit: "delta-retpolines/op",
		Label: "its", Has: "Aligned branch/return thunks", Want: 1, Needs: "an anatomy of an ITS boot (tools/bootmatrix KERNEL its)"},
	{IDs: "8.1", Row: k0Row, Unit: "retthunks/op", Label: "its", Has: "Vulnerable", Want: 0,
		Needs: "an anatomy of an indirect_target_selection=off boot (tools/bootmatrix KERNEL its-off)"},
	{IDs: "SRSO", Row: k0Row, Unit: "bare-rets/op", Label: "spec-rstack-overflow", Has: "Safe RET", Want: 0,
		Needs: "an anatomy of a Safe RET boot (tools/bootmatrix KERNEL srso-safe-ret)"},
	{IDs: "SRSO", Row: k0Row, Unit: "calls-rets/op", Label: "spec-rstack-overflow", Has: "Safe RET", WantUnits: []string{"retthunks/op"},
		Needs: "an anatomy of a Safe RET boot (tools/bootmatrix KERNEL srso-safe-ret)"},
	{IDs: "Retbleed", Row: k0Row, Unit: "bare-rets/op", Label: "retbleed", Has: "untrained return thunk", Want: 0,
		Needs: "an anatomy of an untrained-return-thunk boot (tools/bootmatrix KERNEL untrained-ret)"},
	{IDs: "call depth", Row: k0Row, Unit: "depth-updates/op", Label: "call-depth-tracking", Value: "on", WantUnits: []string{"calls/op", "rets/op"},
		Needs: "an anatomy of a retbleed=stuff boot (tools/bootmatrix KERNEL stuff)"},
	{IDs: "call depth", Row: "BenchmarkCall/call=bpf2bpf/hops=1", Unit: "depth-updates/op", Label: "call-depth-tracking", Value: "on", WantUnits: []string{"calls/op", "rets/op"},
		Needs: "an anatomy of a retbleed=stuff boot (tools/bootmatrix KERNEL stuff)"},
	{IDs: "call depth", Row: "BenchmarkTrampoline/target=xdp/attach=fexit/progs=1", Unit: "depth-updates/op", Label: "call-depth-tracking", Value: "on", WantUnits: []string{"calls/op", "rets/op"},
		Needs: "an anatomy of a retbleed=stuff boot (tools/bootmatrix KERNEL stuff)"},
	{IDs: "7.2", Row: statsRow, Unit: "delta-clock-reads/op", Label: "bpf-stats-enabled", Value: "0", Want: 2,
		Needs: "an anatomy of BenchmarkMitigations's stats rows (make vmbench ICOUNT=0 ANATOMY=1)"},
	{IDs: "9.1", Row: fentryRow, Unit: "delta-instrs/op", Pair: Boots, Label: "mitigations", Has: "default", LabelB: "mitigations", HasB: "off", Want: 0,
		Needs: bootMatrixNeed + "default mitigations-off)"},
	{IDs: "9.1", Row: fentryRow, Unit: "delta-retthunks/op", Pair: Boots, Label: "spec-rstack-overflow", Has: "Safe RET", LabelB: "spec-rstack-overflow", HasB: "Vulnerable",
		WantUnits: []string{"delta-rets/op"}, Needs: bootMatrixNeed + "srso-safe-ret srso-off)"},
	{IDs: "9.1", Row: fentryRow, Unit: "delta-retthunks/op", Pair: Boots, Label: "retbleed", Has: "untrained return thunk", LabelB: "retbleed", HasB: "Vulnerable",
		WantUnits: []string{"delta-rets/op"}, Needs: bootMatrixNeed + "untrained-ret retbleed-off)"},
	{IDs: "9.1", Row: fentryRow, Unit: "delta-depth-updates/op", Pair: Boots, Label: "call-depth-tracking", Has: "on", LabelB: "call-depth-tracking", HasB: "off",
		WantUnits: []string{"delta-calls/op", "delta-rets/op"}, Needs: bootMatrixNeed + "stuff stuff-off)"},
	{IDs: "9.2", Row: "BenchmarkTrampoline/target=helper/attach=fentry-multi/progs=1", Of: fentryRow, Unit: "delta-instrs/op", Pair: Rows, Want: 0,
		Beside: []string{"delta-calls/op", "delta-rets/op"}, Needs: "an anatomy of BenchmarkTrampoline on a kernel with tracing multi-links (make vmbench KERNEL=7.3 ANATOMY=1)"},
	{IDs: "9.3", Row: "BenchmarkTrampoline/target=helper/attach=kprobe-multi/progs=1", Of: fentryRow, Unit: "delta-retpolines/op", Pair: Rows, Want: 2,
		Beside: []string{"delta-instrs/op", "delta-calls/op"}, Label: "retpoline", Value: "on",
		Needs: "an anatomy of BenchmarkTrampoline on a boot with retpolines (make vmbench ANATOMY=1)"},
	{IDs: "9.4", Row: "BenchmarkTrampoline/target=xdp/attach=fsession/progs=1", Of: "BenchmarkTrampoline/target=xdp/attach=both/progs=2", Unit: "delta-calls/op", Pair: Rows, Want: 0,
		Beside: []string{"delta-instrs/op", "delta-rets/op"}, Needs: "an anatomy of BenchmarkTrampoline on a kernel with fsession (make vmbench KERNEL=7.3 ANATOMY=1)"},
}

// matches says a file is of the boot a Single rule reads.
func (r Rule) matches(f *benchfile.File) bool {
	l := f.Label(r.Label)
	if r.Has != "" {
		return strings.Contains(l, r.Has)
	}
	return l == r.Value || strings.HasPrefix(l, r.Value+" ")
}

// want is the count a Single rule expects of f.
func (r Rule) want(f *benchfile.File) (float64, bool) {
	if len(r.WantUnits) == 0 {
		return r.Want, true
	}
	sum := 0.0
	for _, u := range r.WantUnits {
		v, ok := value(f, r.Row, u)
		if !ok {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// IsAnatomy says a file is an anatomy file.
func IsAnatomy(f *benchfile.File) bool { _, ok := f.Config["anatomy"]; return ok }

// An Outcome is a rule's verdict.
type Outcome struct {
	Rule    Rule
	Files   []*benchfile.File
	Counted string
	Verdict string
}

// Judge applies every rule to the anatomy files.
func Judge(files []*benchfile.File) []Outcome {
	var out []Outcome
	for _, r := range Rules {
		out = append(out, r.judge(files)...)
	}
	return out
}

func (r Rule) judge(files []*benchfile.File) []Outcome {
	var out []Outcome
	switch r.Pair {
	case Single:
		for _, f := range files {
			if !r.matches(f) {
				continue
			}
			v, ok := value(f, r.Row, r.Unit)
			want, ok2 := r.want(f)
			if !ok || !ok2 {
				continue
			}
			counted := signed(v)
			if len(r.WantUnits) > 0 {
				counted += fmt.Sprintf(" (%s: %s)", strings.Join(r.WantUnits, " + "), signed(want))
			}
			// The path length beside the mechanism: what a count of
			// instructions alone would have said.
			path := "instrs/op"
			if strings.HasPrefix(r.Unit, "delta-") {
				path = "delta-instrs/op"
			}
			if p, ok := value(f, r.Row, path); ok {
				counted += fmt.Sprintf("; %s %.2f", path, p)
			}
			out = append(out, Outcome{Rule: r, Files: []*benchfile.File{f}, Counted: counted, Verdict: decide(v, want)})
		}
	case CFI:
		for _, a := range files {
			if a.Label("cfi") != "kcfi" && a.Label("cfi") != "fineibt" {
				continue
			}
			for _, b := range files {
				if b.Label("cfi") != "off" || !cfiPair(a, b) {
					continue
				}
				// FineIBT's check is the callee's: the same count, of
				// another instruction sequence.
				unit := r.Unit
				if a.Label("cfi") == "fineibt" {
					unit = strings.Replace(unit, "kcfi-checks", "fineibt-checks", 1)
				}
				va, ok1 := value(a, r.Row, unit)
				vb, ok2 := value(b, r.Row, r.Unit)
				if !ok1 || !ok2 {
					continue
				}
				out = append(out, Outcome{Rule: r, Files: []*benchfile.File{a, b},
					Counted: fmt.Sprintf("%s - %s = %s", signed(va), signed(vb), signed(va-vb)), Verdict: decide(va-vb, r.Want)})
			}
		}
	case Kernels:
		for _, a := range files {
			if !newer(a, 6, 19) {
				continue
			}
			for _, b := range files {
				if newer(b, 6, 19) || b.Label("cfi") != a.Label("cfi") || b.Label("retpoline") != a.Label("retpoline") {
					continue
				}
				va, ok1 := value(a, r.Row, r.Unit)
				vb, ok2 := value(b, r.Row, r.Unit)
				if !ok1 || !ok2 {
					continue
				}
				v := "in mechanism"
				if decide(va, r.WantA) != v || decide(vb, r.WantB) != v {
					v = "not in mechanism"
				}
				counted := fmt.Sprintf("%s then %s", signed(vb), signed(va))
				for _, row := range r.Beside {
					xa, ok1 := value(a, row, r.Unit)
					xb, ok2 := value(b, row, r.Unit)
					if ok1 && ok2 {
						counted += fmt.Sprintf("; %s: %s then %s", short(row), signed(xb), signed(xa))
					}
				}
				out = append(out, Outcome{Rule: r, Files: []*benchfile.File{a, b}, Counted: counted, Verdict: v})
			}
		}
	case Rows:
		for _, f := range files {
			if r.Label != "" && !r.matches(f) {
				continue
			}
			va, ok1 := value(f, r.Row, r.Unit)
			vb, ok2 := value(f, r.Of, r.Unit)
			if !ok1 || !ok2 {
				continue
			}
			counted := fmt.Sprintf("%s - %s = %s", signed(va), signed(vb), signed(va-vb))
			for _, u := range r.Beside {
				xa, ok1 := value(f, r.Row, u)
				xb, ok2 := value(f, r.Of, u)
				if ok1 && ok2 {
					counted += fmt.Sprintf("; %s %.2f against %.2f", u, xa, xb)
				}
			}
			out = append(out, Outcome{Rule: r, Files: []*benchfile.File{f}, Counted: counted, Verdict: decide(va-vb, r.Want)})
		}
	case Boots:
		for _, a := range files {
			if !strings.Contains(a.Label(r.Label), r.Has) {
				continue
			}
			for _, b := range files {
				// B is not of A's boot: "Vulnerable: Safe RET" holds
				// "Vulnerable" too.
				ofA := r.LabelB == r.Label && strings.Contains(b.Label(r.Label), r.Has)
				if !strings.Contains(b.Label(r.LabelB), r.HasB) || ofA ||
					b.Label("kernel") != a.Label("kernel") || b.Label("qemu-cpu") != a.Label("qemu-cpu") {
					continue
				}
				va, ok1 := value(a, r.Row, r.Unit)
				vb, ok2 := value(b, r.Row, r.Unit)
				want, ok3 := r.want(a)
				if !ok1 || !ok2 || !ok3 {
					continue
				}
				counted := fmt.Sprintf("%s - %s = %s", signed(va), signed(vb), signed(va-vb))
				if len(r.WantUnits) > 0 {
					counted += fmt.Sprintf(" (%s: %s)", strings.Join(r.WantUnits, " + "), signed(want))
				}
				path := "instrs/op"
				if strings.HasPrefix(r.Unit, "delta-") {
					path = "delta-instrs/op"
				}
				if pa, ok := value(a, r.Row, path); ok {
					if pb, ok := value(b, r.Row, path); ok {
						counted += fmt.Sprintf("; %s %.2f against %.2f", path, pa, pb)
					}
				}
				out = append(out, Outcome{Rule: r, Files: []*benchfile.File{a, b}, Counted: counted, Verdict: decide(va-vb, want)})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, Outcome{Rule: r, Verdict: "needs " + r.Needs})
	}
	return out
}

func decide(v, want float64) string {
	if math.Abs(v-want) <= Tolerance {
		return "in mechanism"
	}
	return "not in mechanism"
}

func value(f *benchfile.File, row, unit string) (float64, bool) {
	runs := f.Runs[row]
	if len(runs) == 0 {
		return 0, false
	}
	v, ok := runs[0].Values[unit]
	return v, ok
}

func signed(v float64) string {
	if math.Abs(v) < 0.005 {
		return "0.00"
	}
	return fmt.Sprintf("%+.2f", v)
}

func short(row string) string { return strings.TrimPrefix(row, "Benchmark") }

// cfiPair says b is a's kernel without CFI: the same build booted with
// cfi=off, or the pair make kcfi-kernels builds from one source and
// config (<release>-bpfbench-kcfi and -nocfi). Another build of the same
// release differs in more than CFI (Debian's is built with gcc).
func cfiPair(a, b *benchfile.File) bool {
	ka, kb := a.Label("kernel"), b.Label("kernel")
	return ka == kb || (strings.HasSuffix(ka, "-kcfi") && kb == strings.TrimSuffix(ka, "-kcfi")+"-nocfi")
}

var releaseRe = regexp.MustCompile(`^(\d+)\.(\d+)(\.\d+)?`)

// newer says the file's kernel is major.minor or later.
func newer(f *benchfile.File, major, minor int) bool {
	m := releaseRe.FindStringSubmatch(f.Label("kernel"))
	if m == nil {
		return false
	}
	x, _ := strconv.Atoi(m[1])
	y, _ := strconv.Atoi(m[2])
	return x > major || (x == major && y >= minor)
}

// Report prints the mechanism verdicts, naming the files by their
// position in all (A, B, ...).
func Report(w io.Writer, all []*benchfile.File) {
	var files []*benchfile.File
	for _, f := range all {
		if IsAnatomy(f) {
			files = append(files, f)
		}
	}
	fmt.Fprintf(w, "\nMechanisms (anatomy files: counts per repetition; docs/claims.md#mechanisms-what-the-anatomy-must-count):\n")
	for i, f := range files {
		fmt.Fprintf(w, "  [%c] %s (kernel %s, retpoline %s, cfi %s)\n", 'a'+i, f.Path, f.Label("kernel"), f.Label("retpoline"), f.Label("cfi"))
	}
	if len(files) == 0 {
		fmt.Fprintf(w, "  no anatomy file given (make vmbench ANATOMY=1 writes one beside its results)\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "claim\trow (count)\texpected\tcounted\tverdict\n")
	for _, o := range Judge(files) {
		var tags []string
		for _, f := range o.Files {
			for i, g := range files {
				if f == g {
					tags = append(tags, fmt.Sprintf("%c", 'a'+i))
				}
			}
		}
		tag := ""
		if len(tags) > 0 {
			tag = " [" + strings.Join(tags, "-") + "]"
		}
		fmt.Fprintf(tw, "%s%s\t%s (%s)\t%s\t%s\t%s\n", o.Rule.IDs, tag, short(o.Rule.Row), o.Rule.Unit, o.Rule.expected(), o.Counted, o.Verdict)
	}
	tw.Flush()
}

func (r Rule) expected() string {
	switch r.Pair {
	case CFI:
		return "kcfi - off = " + signed(r.Want)
	case Kernels:
		return fmt.Sprintf("%s then %s", signed(r.WantB), signed(r.WantA))
	case Rows:
		return fmt.Sprintf("minus %s: %s", short(r.Of), signed(r.Want))
	case Boots:
		want := signed(r.Want)
		if len(r.WantUnits) > 0 {
			want = "= " + strings.Join(r.WantUnits, " + ")
		}
		return fmt.Sprintf("...%s minus ...%s: %s", r.Has, r.HasB, want)
	}
	boot := r.Value
	if r.Has != "" {
		boot = "..." + r.Has
	}
	if len(r.WantUnits) > 0 {
		return fmt.Sprintf("= %s (%s: %s)", strings.Join(r.WantUnits, " + "), r.Label, boot)
	}
	return fmt.Sprintf("%s (%s: %s)", signed(r.Want), r.Label, boot)
}
