package verdict

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/stat"
)

// Report prints the verdicts on every claim for the files.
func Report(w io.Writer, files []*benchfile.File) {
	fmt.Fprintf(w, "Published claims (docs/claims.md) checked against:\n")
	for i, f := range files {
		fmt.Fprintf(w, "  %s%s\n", fileTag(files, i), f.Path)
		if !f.HasResults() {
			fmt.Fprintf(w, "      holds no results (no benchmark result lines): nothing in it can be judged\n")
		}
		var ls []string
		for _, k := range benchfile.BootLabels {
			ls = append(ls, k+": "+f.Label(k))
		}
		fmt.Fprintf(w, "      %s\n", strings.Join(ls, " | "))
		if missing := f.MissingLabels(benchfile.BootLabels); len(missing) == len(benchfile.BootLabels) {
			fmt.Fprintf(w, "      warning: no labels (configuration lines): no claim that needs a particular boot can use this file\n")
		} else if len(missing) > 0 {
			fmt.Fprintf(w, "      warning: labels missing: %s\n", strings.Join(missing, ", "))
		}
		switch {
		case f.Icount():
			fmt.Fprintf(w, "      instruction counts (virt: tcg-icount): no timing verdict; shapes only\n")
		case f.Emulated():
			fmt.Fprintf(w, "      emulated guest (virt: %s): no timing verdict\n", f.Label("virt"))
		}
		for _, warn := range f.Warnings {
			fmt.Fprintf(w, "      warning: %s\n", warn)
		}
		for _, warn := range failures(f) {
			fmt.Fprintf(w, "      warning: %s\n", warn)
		}
		if why := controlFails(f); why != "" {
			fmt.Fprintf(w, "      warning: %s: no timing verdict from this file\n", why)
		}
	}

	var outcomes []Outcome
	for i := range claims.All {
		outcomes = append(outcomes, Evaluate(&claims.All[i], files)...)
	}

	fmt.Fprintf(w, "\nVerdicts (ns per packet or call: published value [range it allows], measured value [CI, at least 95%%];\n"+
		"shape rows: the change in instructions per call, newer kernel minus older):\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "claim\tpublished\tmeasured here\tverdict\n")
	for _, o := range outcomes {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", o.ID(), tags(files, o.Files, o.Verdict.Judged()), published(o), measured(o), verdict(o))
	}
	tw.Flush()

	fmt.Fprintf(w, "\nDetails:\n")
	for _, o := range outcomes {
		c := o.Claim
		p := c.Published
		fmt.Fprintf(w, "\n%s%s  %s\n", o.ID(), tags(files, o.Files, o.Verdict.Judged()), c.Text)
		m := c.Measure
		switch {
		case c.Info != nil:
			fmt.Fprintf(w, "    published: no figure: %s\n", p.From)
		case o.Shape:
			m = c.Shape.Measure
			claim := "the path gets shorter in instructions (the change below 0)"
			switch c.Shape.Change {
			case claims.Unchanged:
				claim = "the path keeps its length in instructions (the change within ±4%)"
			case claims.Longer:
				claim = "the path gets longer in instructions (the change above 0)"
			}
			fmt.Fprintf(w, "    claimed:   %s; the published timing: %s\n", claim, p.From)
		default:
			fmt.Fprintf(w, "    published: %s %s, allowed [%s, %s]: %s; %s\n", stat.FormatTrim(p.Value), p.Unit, stat.FormatTrim(p.Lo), stat.FormatTrim(p.Hi), p.From, p.Why)
		}
		if m.A.Family != "" {
			fmt.Fprintf(w, "    measures:  %s: %s", m.What, m.A)
			if m.B.Family != "" {
				fmt.Fprintf(w, " minus %s", m.B)
			}
			fmt.Fprintln(w)
		}
		if o.Verdict.Judged() {
			e := o.Estimate
			unit := p.Unit
			if o.Shape {
				unit = "instrs/call"
			}
			fmt.Fprintf(w, "    measured:  %s %s, CI %s (%s)\n", stat.Format(e.Center), unit, interval(e.Lo, e.Hi), e.Method)
		}
		if m.Note != "" {
			fmt.Fprintf(w, "    note:      %s\n", m.Note)
		}
		for _, n := range o.Notes {
			fmt.Fprintf(w, "    note:      %s\n", n)
		}
		fmt.Fprintf(w, "    verdict:   %s: %s\n", strings.ToUpper(verdict(o)), o.Reason)
	}
	fmt.Fprintf(w, "\nRules (docs/report.md), the first that holds decides:\n")
	for _, r := range timingRules {
		fmt.Fprintf(w, "  %s: %s\n", r.verdict, r.text)
	}
	fmt.Fprintf(w, "For a shape (instruction counts of two kernels, newer minus older), after %s as above:\n", NoInterval)
	for _, r := range shapeRules {
		if r.verdict != NoInterval {
			fmt.Fprintf(w, "  %s: %s\n", r.verdict, r.text)
		}
	}
	fmt.Fprintf(w, "The published range is the figure's own precision (whole-ns truncation, ~4%% rate noise), not an\n"+
		"allowance for other hardware. From 6 or more runs the interval is across the runs; from fewer the\n"+
		"verdict says so (one run: the interval of that run only).\n")
}

// published is the table's published column of an outcome.
func published(o Outcome) string {
	p := o.Claim.Published
	switch {
	case o.Claim.Info != nil:
		return "-"
	case o.Shape:
		return shapeClaim(o.Claim.Shape.Change)
	}
	return fmt.Sprintf("%s [%s, %s]", stat.FormatTrim(p.Value), stat.FormatTrim(p.Lo), stat.FormatTrim(p.Hi))
}

func shapeClaim(c claims.Change) string {
	switch c {
	case claims.Unchanged:
		return "unchanged (±4%)"
	case claims.Longer:
		return "longer (> 0)"
	}
	return "shorter (< 0)"
}

// measured is the table's measured column of an outcome.
func measured(o Outcome) string {
	if !o.Verdict.Judged() {
		return "-"
	}
	e := o.Estimate
	s := stat.Format(e.Center) + " " + interval(e.Lo, e.Hi)
	if o.Shape {
		s += " instrs"
	}
	return s
}

// verdict is the verdict with what it must say with it: that it rests
// on one run, or on few.
func verdict(o Outcome) string {
	if o.Verdict.Judged() && o.Estimate.Caveat != "" {
		return o.Verdict.String() + " (" + o.Estimate.Caveat + ")"
	}
	return o.Verdict.String()
}

// failures summarises the failed runs of a file, one line per
// sub-benchmark.
func failures(f *benchfile.File) []string {
	var out []string
	for _, n := range f.Names {
		if why := f.Failed[n]; len(why) > 0 {
			out = append(out, fmt.Sprintf("%s: %d of %d runs failed and are left out (%s)",
				strings.TrimPrefix(n, "Benchmark"), len(why), len(why)+len(f.Runs[n]), why[0]))
		}
	}
	for n, why := range f.Failed {
		if _, ok := f.Runs[n]; !ok {
			out = append(out, fmt.Sprintf("%s: every run failed (%s)", strings.TrimPrefix(n, "Benchmark"), why[0]))
		}
	}
	return out
}

// fileTag is "A: " when several files are given.
func fileTag(files []*benchfile.File, i int) string {
	if len(files) < 2 {
		return ""
	}
	return string(rune('A'+i)) + ": "
}

// tags is " [A]" or " [A-B]" naming the files an outcome measured, or
// " [all]" for a verdict on all of them, when several files are given.
func tags(all, used []*benchfile.File, measured bool) string {
	if len(all) < 2 {
		return ""
	}
	if len(used) == len(all) && !measured {
		return " [all]"
	}
	var t []string
	for _, u := range used {
		for i, f := range all {
			if f == u {
				t = append(t, string(rune('A'+i)))
			}
		}
	}
	return " [" + strings.Join(t, "-") + "]"
}

// interval formats [lo, hi].
func interval(lo, hi float64) string {
	return "[" + stat.Format(lo) + ", " + stat.Format(hi) + "]"
}
