package drift

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"
)

// Instruction counts compare as counts: a row of a virt: tcg-icount file
// is the same on every run and host (docs/icount.md), so the difference
// between two kernels' files is the answer itself, and a test over their
// runs (one each) could only say "n=1". ReportExact prints, per row, B, A,
// B-A and the change in percent. Rows the kernel's loop did not time
// (no kernel-instrs/op: bpf_loop drivers) are not exact, and are marked
// with their own spread over the files' runs.

// bootLabels are the labels that say how a kernel was booted: the
// command line, the CPU model, and the mitigations they switched.
var bootLabels = []string{"kernel", "qemu-cpu", "cpu-family-model", "mitigations", "cmdline-mitigations",
	"spectre-v2", "retbleed", "spec-rstack-overflow", "its", "retpoline", "ibt", "cfi", "call-depth-tracking"}

// BootDiff lists the boot labels whose values differ between a and b,
// as "label: A -> B".
func BootDiff(a, b *benchfile.File) []string {
	var out []string
	for _, k := range bootLabels {
		if va, vb := a.Label(k), b.Label(k); va != vb {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, va, vb))
		}
	}
	return out
}

// exactUnits are the units compared, in order.
var exactUnits = []string{"instrs/op", "delta-instrs/op"}

// A Count is one row's count in two files.
type Count struct {
	Name string
	A, B float64
	// Exact says the kernel's loop timed the row in both files.
	Exact bool
	// Spread is the larger relative range of the row's runs within
	// either file (0 for one run each).
	Spread float64
}

// Counts are the rows both files hold in unit, in A's order.
func Counts(a, b *benchfile.File, unit string) []Count {
	var rows []Count
	for _, name := range a.Names {
		av, bv := benchfile.Values(a.Runs[name], unit), benchfile.Values(b.Runs[name], unit)
		if len(av) == 0 || len(bv) == 0 {
			continue
		}
		r := Count{Name: name, A: stat.Median(av), B: stat.Median(bv),
			Exact:  kernelTimed(a.Runs[name]) && kernelTimed(b.Runs[name]),
			Spread: math.Max(spread(av), spread(bv))}
		rows = append(rows, r)
	}
	return rows
}

// kernelTimed says the runs report the kernel loop's own count.
func kernelTimed(runs []benchfile.Run) bool {
	return len(runs) > 0 && len(benchfile.Values(runs, "kernel-instrs/op")) == len(runs)
}

// spread is the range of vs over their median's absolute value.
func spread(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	m := math.Abs(stat.Median(vs))
	if m == 0 {
		return 0
	}
	return (slices.Max(vs) - slices.Min(vs)) / m
}

// ReportExact prints the rows of two instruction-count files as counts.
func ReportExact(w io.Writer, a, b *benchfile.File) {
	fmt.Fprintf(w, "Instruction counts (virt: tcg-icount): exact, compared as counts, no significance test\n")
	fmt.Fprintf(w, "  A=%s (kernel %s)\n  B=%s (kernel %s)\n", a.Path, a.Label("kernel"), b.Path, b.Label("kernel"))
	if d := BootDiff(a, b); len(d) > 0 {
		fmt.Fprintf(w, "  the boots differ in:\n")
		for _, l := range d {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	fmt.Fprintf(w, "  rows marked ~ are not exact (the kernel's loop did not time them: bpf_loop drivers); their spread is their runs'\n")
	for _, u := range exactUnits {
		rows := Counts(a, b, u)
		if len(rows) == 0 {
			continue
		}
		changed := 0
		for _, r := range rows {
			if math.Abs(r.B-r.A) >= 0.5 {
				changed++
			}
		}
		fmt.Fprintf(w, "\n%s: %d rows, %d changed by half an instruction or more\n", u, len(rows), changed)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\t%9s\t%9s\t%9s\t%8s\t\n", "A", "B", "B-A", "change")
		for _, r := range rows {
			pct := Pct(r.A, r.B)
			mark := ""
			switch {
			case !r.Exact && r.Spread > 0:
				mark = fmt.Sprintf("~ not exact, spread %.0f%%", 100*r.Spread)
			case !r.Exact:
				mark = "~ not exact"
			}
			fmt.Fprintf(tw, "%s\t%9.2f\t%9.2f\t%+9.2f\t%8s\t%s\n", r.Name, r.A, r.B, r.B-r.A, pct, mark)
		}
		tw.Flush()
	}
}

// Pct is b's change over a in percent, "n/a" from 0.
func Pct(a, b float64) string {
	if a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*(b-a)/math.Abs(a))
}
