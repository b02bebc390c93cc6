// Command report turns results files into verdicts on the published
// figures of docs/claims.md, and draws the curves the files have data for.
//
//	go run ./results/report [-plots=false] results/<file>.txt [other.txt]
//
// For every claim it prints the published figure converted to ns per
// packet or call, the value measured here with its 95% confidence
// interval, and a verdict: within, overlapping or outside the published
// range, or cannot tell from zero (the rules: timingRules in verdict.go,
// docs/report.md); for a claim about path length, whether instruction
// counts of two kernels are in shape; or why there is no verdict (no
// timing verdict from an emulated or instruction-count file or one whose
// A/A control fails, not measurable on this kernel, no data, no results).
// Claims that need another boot (mitigations=off, a CFI kernel) are
// measured across two files when both are given: the report recognises
// each file's boot from its labels (mitigations, retpoline, cfi).
//
// With -drift and two files A and B it prints instead how far their rows
// moved together and which rows moved beyond that (see Drift), and which
// of those beyond the machine's noise (an A/A pair of its own, -aa):
// what `make compare` adds to benchstat's table. Two instruction-count
// files compare as counts instead (ReportExact).
//
//	go run ./results/report -drift A.txt B.txt
//
// Plots are written as SVG next to each results file:
// <stem>-dispatcher.svg, -trampoline.svg, -tailcall.svg, -attach.svg,
// each only when the file has that family's data.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"bpfbench/results/benchfile"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: it prints the report on stdout and returns the exit
// status: 2 for a usage error, 1 when a file cannot be read, no file holds
// a result, or a plot cannot be written.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	plots := fs.Bool("plots", true, "write SVG plots next to each results file")
	plotDir := fs.String("plotdir", "", "write the plots here instead of next to the results files")
	drift := fs.Bool("drift", false, "given two files A and B: how far their rows moved together, and which moved beyond that (no verdicts, no plots)")
	uncontended := fs.Bool("uncontended", false, "given one file: print it without the result lines of rows that never saw an uncontended core (contended-frac above 0.9), for benchstat")
	allUnits := fs.Bool("all", false, "with -drift: also the shift in ns/op")
	aaDir := fs.String("aa", "results/aa", "with -drift: the `directory` of A/A pairs (<runstamp>-<name>-aa1.txt, -aa2.txt); the newest pair of A's machine sets the noise floor")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: report [flags] results.txt [other-boot.txt ...]\n       report -drift A.txt B.txt\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	if *uncontended {
		if fs.NArg() != 1 {
			fmt.Fprintf(stderr, "report: -uncontended takes one file, not %d\n", fs.NArg())
			return 2
		}
		if err := benchfile.CopyUncontended(stdout, fs.Arg(0)); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
		return 0
	}
	var files []*benchfile.File
	for _, p := range fs.Args() {
		f, err := benchfile.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 1
		}
		files = append(files, f)
	}
	if *drift {
		if len(files) != 2 {
			fmt.Fprintf(stderr, "report: -drift compares two files, not %d\n", len(files))
			return 2
		}
		if files[0].Icount() && files[1].Icount() {
			ReportExact(stdout, files[0], files[1])
			return 0
		}
		aa, _ := FindAA(*aaDir, files[0])
		units := driftUnits
		if *allUnits {
			units = allDriftUnits
		}
		ReportDrift(stdout, files[0], files[1], aa, units)
		return 0
	}
	Report(stdout, files)
	if !slices.ContainsFunc(files, (*benchfile.File).HasResults) {
		fmt.Fprintf(stderr, "report: no results in %s: nothing to judge\n", strings.Join(fs.Args(), ", "))
		return 1
	}
	if !*plots {
		return 0
	}
	status := 0
	for _, f := range files {
		written, err := Plots(f, *plotDir)
		for _, w := range written {
			fmt.Fprintf(stdout, "wrote %s\n", w)
		}
		if err != nil {
			fmt.Fprintf(stderr, "report: plots of %s: %v\n", f.Path, err)
			status = 1
		}
	}
	// Across files: instruction counts per kernel, when two kernels have them.
	if w, err := writeKernelPlot(files, *plotDir); err != nil {
		fmt.Fprintf(stderr, "report: kernel plot: %v\n", err)
		status = 1
	} else if w != "" {
		fmt.Fprintf(stdout, "wrote %s\n", w)
	}
	return status
}

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
	for i := range claims {
		outcomes = append(outcomes, Evaluate(&claims[i], files)...)
	}

	fmt.Fprintf(w, "\nVerdicts (ns per packet or call: published value [range it allows], measured value [CI, at least 95%%];\n"+
		"shape rows: the change in instructions per call, newer kernel minus older):\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "claim\tpublished\tmeasured here\tverdict\n")
	for _, o := range outcomes {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", o.ID(), tags(files, o.Files, o.Verdict.judged()), published(o), measured(o), verdict(o))
	}
	tw.Flush()

	fmt.Fprintf(w, "\nDetails:\n")
	for _, o := range outcomes {
		c := o.Claim
		p := c.Published
		fmt.Fprintf(w, "\n%s%s  %s\n", o.ID(), tags(files, o.Files, o.Verdict.judged()), c.Text)
		m := c.Measure
		switch {
		case c.Info != nil:
			fmt.Fprintf(w, "    published: no figure: %s\n", p.From)
		case o.Shape:
			m = c.Shape.Measure
			claim := "the path gets shorter in instructions (the change below 0)"
			switch c.Shape.Change {
			case Unchanged:
				claim = "the path keeps its length in instructions (the change within ±4%)"
			case Longer:
				claim = "the path gets longer in instructions (the change above 0)"
			}
			fmt.Fprintf(w, "    claimed:   %s; the published timing: %s\n", claim, p.From)
		default:
			fmt.Fprintf(w, "    published: %s %s, allowed [%s, %s]: %s; %s\n", trim(p.Value), p.Unit, trim(p.Lo), trim(p.Hi), p.From, p.Why)
		}
		if m.A.Family != "" {
			fmt.Fprintf(w, "    measures:  %s: %s", m.What, m.A)
			if m.B.Family != "" {
				fmt.Fprintf(w, " minus %s", m.B)
			}
			fmt.Fprintln(w)
		}
		if o.Verdict.judged() {
			e := o.Estimate
			unit := p.Unit
			if o.Shape {
				unit = "instrs/call"
			}
			fmt.Fprintf(w, "    measured:  %s %s, CI %s (%s)\n", num(e.Center), unit, interval(e.Lo, e.Hi), e.Method)
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
	return fmt.Sprintf("%s [%s, %s]", trim(p.Value), trim(p.Lo), trim(p.Hi))
}

func shapeClaim(c Change) string {
	switch c {
	case Unchanged:
		return "unchanged (±4%)"
	case Longer:
		return "longer (> 0)"
	}
	return "shorter (< 0)"
}

// measured is the table's measured column of an outcome.
func measured(o Outcome) string {
	if !o.Verdict.judged() {
		return "-"
	}
	e := o.Estimate
	s := num(e.Center) + " " + interval(e.Lo, e.Hi)
	if o.Shape {
		s += " instrs"
	}
	return s
}

// verdict is the verdict with what it must say with it: that it rests
// on one run, or on few.
func verdict(o Outcome) string {
	if o.Verdict.judged() && o.Estimate.Caveat != "" {
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

// trim formats a published value without trailing zeros.
func trim(v float64) string {
	s := num(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
