package anatomy

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"bpfbench/results/benchfile"
)

// column is a unit of an anatomy file and its short heading.
type column struct{ unit, head string }

var columns = []column{
	{Instrs.Unit(), "instrs"},
	{Calls.Unit(), "calls"},
	{IndirectCalls.Unit(), "icalls"},
	{IndirectJumps.Unit(), "ijmps"},
	{Rets.Unit(), "rets"},
	{UnitCallsMinusRets, "calls-rets"},
	{BareRets.Unit(), "bare-rets"},
	{Retpolines.Unit(), "retpoline"},
	{ReturnThunks.Unit(), "retthunk"},
	{ITSThunks.Unit(), "its"},
	{Lfences.Unit(), "lfence"},
	{Serialising.Unit(), "serial"},
	{KCFIChecks.Unit(), "kcfi"},
	{FineIBT.Unit(), "fineibt"},
	{Endbr.Unit(), "endbr"},
	{DepthAccounting.Unit(), "depth"},
	{ClockReads.Unit(), "clock"},
	{Undecoded.Unit(), "undecoded"},
}

// Table prints an anatomy file's rows: what each runs per op, and
// against its baseline. With base, it prints f's counts less base's, row
// by row. A kind no row runs is left out.
func Table(f, base *benchfile.File) string {
	var b strings.Builder
	if base == nil {
		section(&b, f, "per op", "", nil)
		section(&b, f, "variant - baseline, per op", "delta-", nil)
		return b.String()
	}
	fmt.Fprintf(&b, "A: %s (%s)\nB: %s (%s)\n", base.Path, base.Label("kernel"), f.Path, f.Label("kernel"))
	section(&b, f, "B - A, per op", "", base)
	section(&b, f, "B - A of variant - baseline, per op", "delta-", base)
	return b.String()
}

func section(b *strings.Builder, f *benchfile.File, title, prefix string, base *benchfile.File) {
	value := func(name, unit string) (float64, bool) {
		runs := f.Runs[name]
		if len(runs) == 0 {
			return 0, false
		}
		v, ok := runs[0].Values[prefix+unit]
		if base != nil && ok {
			br := base.Runs[name]
			if len(br) == 0 {
				return 0, false
			}
			w, ok := br[0].Values[prefix+unit]
			return v - w, ok
		}
		return v, ok
	}
	var shown []column
	for _, c := range columns {
		for _, n := range f.Names {
			if v, ok := value(n, c.unit); ok && math.Abs(v) >= 0.005 {
				shown = append(shown, c)
				break
			}
		}
	}
	var names []string
	for _, n := range f.Names {
		if _, ok := value(n, Instrs.Unit()); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(w, "row\t")
	for _, c := range shown {
		fmt.Fprintf(w, "%s\t", c.head)
	}
	fmt.Fprintln(w)
	for _, n := range names {
		fmt.Fprintf(w, "%s\t", n)
		for _, c := range shown {
			v, _ := value(n, c.unit)
			fmt.Fprintf(w, "%s\t", num(v, base != nil || prefix != ""))
		}
		fmt.Fprintln(w)
	}
	w.Flush()
}

// num prints a count to two decimals, a signed one with its sign, and
// zero as a dot so that what a row runs stands out.
func num(v float64, signed bool) string {
	if math.Abs(v) < 0.005 {
		return "."
	}
	if signed {
		return fmt.Sprintf("%+.2f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Matrix prints one unit of several files (one kernel's boots) as rows ×
// files, in markdown, each file's column headed by its boot: the QEMU
// CPU model and the mitigation options of its command line. A row a
// file lacks is "-".
func Matrix(files []*benchfile.File, unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| row (%s) |", unit)
	for _, f := range files {
		fmt.Fprintf(&b, " %s %s |", f.Label("qemu-cpu"), f.Label("cmdline-mitigations"))
	}
	fmt.Fprintf(&b, "\n|---|%s\n", strings.Repeat("---:|", len(files)))
	seen := map[string]bool{}
	for _, f := range files {
		for _, n := range f.Names {
			if seen[n] {
				continue
			}
			seen[n] = true
			fmt.Fprintf(&b, "| `%s` |", strings.TrimPrefix(n, "Benchmark"))
			for _, g := range files {
				if runs := g.Runs[n]; len(runs) > 0 {
					if v, ok := runs[0].Values[unit]; ok {
						fmt.Fprintf(&b, " %.2f |", v)
						continue
					}
				}
				fmt.Fprintf(&b, " - |")
			}
			fmt.Fprintln(&b)
		}
	}
	return b.String()
}
