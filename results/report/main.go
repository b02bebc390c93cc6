// Command report turns results files into verdicts on the published
// figures of docs/claims.md, and draws the curves the files have data for.
//
//	go run ./results/report [-plots=false] results/<file>.txt [other.txt]
//
// For every claim it prints the published figure converted to ns per
// packet or call, the value measured here with its 95% confidence
// interval, and a verdict: confirmed, refuted, inside the noise, not
// measurable on this kernel (with the reason), or no data in this file.
// Claims that need another boot (mitigations=off, a CFI kernel) are
// measured across two files when both are given: the report recognises
// each file's boot from its labels (mitigations, retpoline, cfi).
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
	"strings"
	"text/tabwriter"
)

func main() {
	plots := flag.Bool("plots", true, "write SVG plots next to each results file")
	plotDir := flag.String("plotdir", "", "write the plots here instead of next to the results files")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: report [flags] results.txt [other-boot.txt ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var files []*File
	for _, p := range flag.Args() {
		f, err := ReadFile(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "report: %v\n", err)
			os.Exit(1)
		}
		files = append(files, f)
	}
	Report(os.Stdout, files)
	if !*plots {
		return
	}
	failed := false
	for _, f := range files {
		written, err := Plots(f, *plotDir)
		for _, w := range written {
			fmt.Printf("wrote %s\n", w)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "report: plots of %s: %v\n", f.Path, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// Report prints the verdicts on every claim for the files.
func Report(w io.Writer, files []*File) {
	fmt.Fprintf(w, "Published claims (docs/claims.md) checked against:\n")
	for i, f := range files {
		fmt.Fprintf(w, "  %s%s\n", fileTag(files, i), f.Path)
		var ls []string
		for _, k := range bootLabels {
			ls = append(ls, k+": "+f.Label(k))
		}
		fmt.Fprintf(w, "      %s\n", strings.Join(ls, " | "))
		for _, warn := range f.Warnings {
			fmt.Fprintf(w, "      warning: %s\n", warn)
		}
		for _, warn := range failures(f) {
			fmt.Fprintf(w, "      warning: %s\n", warn)
		}
	}

	var outcomes []Outcome
	for i := range claims {
		outcomes = append(outcomes, Evaluate(&claims[i], files)...)
	}

	fmt.Fprintf(w, "\nVerdicts (ns per packet or call: published value [range it allows], measured value [CI, at least 95%%]):\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "claim\tpublished\tmeasured here\tverdict\n")
	for _, o := range outcomes {
		p := o.Claim.Published
		measured := "-"
		if o.Verdict < NotMeasurable {
			measured = num(o.Estimate.Center) + " " + interval(o.Estimate.Lo, o.Estimate.Hi)
		}
		fmt.Fprintf(tw, "%s%s\t%s [%s, %s]\t%s\t%s\n", o.Claim.ID, tags(files, o.Files, o.Verdict < NotMeasurable), trim(p.Value), trim(p.Lo), trim(p.Hi), measured, o.Verdict)
	}
	tw.Flush()

	fmt.Fprintf(w, "\nDetails:\n")
	for _, o := range outcomes {
		c := o.Claim
		p := c.Published
		fmt.Fprintf(w, "\n%s%s  %s\n", c.ID, tags(files, o.Files, o.Verdict < NotMeasurable), c.Text)
		fmt.Fprintf(w, "    published: %s %s, allowed [%s, %s]: %s; %s\n", trim(p.Value), p.Unit, trim(p.Lo), trim(p.Hi), p.From, p.Why)
		fmt.Fprintf(w, "    measures:  %s: %s", c.Measure.What, c.Measure.A)
		if c.Measure.B.Family != "" {
			fmt.Fprintf(w, " minus %s", c.Measure.B)
		}
		fmt.Fprintln(w)
		if o.Verdict < NotMeasurable {
			e := o.Estimate
			fmt.Fprintf(w, "    measured:  %s %s, CI %s (%s)\n", num(e.Center), p.Unit, interval(e.Lo, e.Hi), e.Method)
		}
		if c.Measure.Note != "" {
			fmt.Fprintf(w, "    note:      %s\n", c.Measure.Note)
		}
		for _, n := range o.Notes {
			fmt.Fprintf(w, "    note:      %s\n", n)
		}
		fmt.Fprintf(w, "    verdict:   %s: %s\n", strings.ToUpper(o.Verdict.String()), o.Reason)
	}
	fmt.Fprintf(w, "\nRule: refuted when the CI and the published range are disjoint; for a claimed effect,\n"+
		"confirmed when they overlap and the CI excludes 0, inside the noise when it includes 0; for a\n"+
		"claimed absence of effect, confirmed when the CI lies inside the range, inside the noise otherwise.\n"+
		"The published range is the figure's own precision (whole-ns truncation, ~4%% rate noise), not an\n"+
		"allowance for other hardware.\n")
}

// failures summarises the failed runs of a file, one line per
// sub-benchmark.
func failures(f *File) []string {
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
func fileTag(files []*File, i int) string {
	if len(files) < 2 {
		return ""
	}
	return string(rune('A'+i)) + ": "
}

// tags is " [A]" or " [A-B]" naming the files an outcome measured, or
// " [all]" for a verdict on all of them, when several files are given.
func tags(all, used []*File, measured bool) string {
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
