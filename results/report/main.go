// Command report turns results files into verdicts on the published
// figures of docs/claims.md, and draws the curves the files have data for;
// anatomy files (tools/anatomy) into verdicts on the claims' mechanisms
// (results/mechanism).
//
//	go run ./results/report [-plots=false] results/<file>.txt [other.txt]
//
// For every claim it prints the published figure converted to ns per
// packet or call, the value measured here with its 95% confidence
// interval, and a verdict: within, overlapping or outside the published
// range, or cannot tell from zero (the rules: timingRules in results/verdict,
// docs/report.md); for a claim about path length, whether instruction
// counts of two kernels are in shape; or why there is no verdict (no
// timing verdict from an emulated or instruction-count file or one whose
// A/A control fails, not measurable on this kernel, no data, no results).
// Claims that need another boot (mitigations=off, a CFI kernel) are
// measured across two files when both are given: the report recognises
// each file's boot from its labels (mitigations, retpoline, cfi).
//
// With -gate and two files A and B it decides whether B regressed against
// A, for a CI job: exit 0 when nothing did, 1 when something did, 2 on a
// usage or read error; one line per failing row (results/gate,
// docs/ci.md).
//
//	go run ./results/report -gate [-fail-on 5%|2ns] [-tolerance N] A.txt B.txt
//
// With -drift and two files A and B it prints instead how far their rows
// moved together and which rows moved beyond that (results/drift), and which
// of those beyond the machine's noise (an A/A pair of its own, -aa):
// what `make compare` adds to benchstat's table. Two instruction-count
// files compare as counts instead (drift.ReportExact).
//
//	go run ./results/report -drift A.txt B.txt
//
// Plots are written as SVG into a plots folder beside each results file:
// <stem>-dispatcher.svg, -trampoline.svg, -tailcall.svg, -attach.svg,
// each only when the file has that family's data.
//
// The work is done by packages under results/, which import one way, as
// x/perf's benchfmt, benchproc and benchmath do: benchfile reads a results
// file, stat estimates from its values, claims is the table of published
// figures, verdict judges them and prints the report, drift compares two
// runs, plots draws the figures. This command parses the flags and picks
// which of them runs.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"bpfbench/bpf/units"
	"bpfbench/results/benchfile"
	"bpfbench/results/drift"
	"bpfbench/results/gate"
	"bpfbench/results/mechanism"
	"bpfbench/results/plots"
	"bpfbench/results/verdict"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: it prints the report on stdout and returns the exit
// status: 2 for a usage error or a file that cannot be read; 1 when no
// file holds a result, a plot cannot be written, or (-gate) B regressed.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	draw := fs.Bool("plots", true, "write SVG plots next to each results file")
	plotDir := fs.String("plotdir", "results/plots", "the `directory` the plots go to")
	compare := fs.Bool("drift", false, "given two files A and B: how far their rows moved together, and which moved beyond that (no verdicts, no plots)")
	uncontended := fs.Bool("uncontended", false, "given one file: print it without the result lines of rows with "+units.TooFewFree()+", judged by the contention rule, for benchstat")
	passes := fs.Bool("passes", false, "given results files: whether each one's passes agree, one comment line a file (make bench appends it): a pass whose rows moved together beyond the others' spread is left out of every figure; and a second line when runs whose paired base ran slow are left out")
	allUnits := fs.Bool("all", false, "with -drift: also the shift in ns/op")
	gateOn := fs.Bool("gate", false, "given two files A and B: exit 1 when B regressed against A (docs/ci.md): a timed row slower beyond the machine's noise or -fail-on, a counted path longer than -tolerance, a mechanism that changed")
	failOn := fs.String("fail-on", "", "with -gate: also fail a timed row slower by more than this: a percentage of cycles/op (5%) or ns/op (2ns)")
	tolerance := fs.Float64("tolerance", -1, "with -gate: the instructions per op a counted path may grow by (default: docs/ci.md#tolerance)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text: the verdicts (and mechanisms, anatomies), with -drift the comparison and the gate's decision, with -gate the gate's (docs/report.md#json)")
	kcidb := fs.Bool("kcidb", false, "print one KCIDB v5.3 report instead (docs/ci.md#kcidb): of results files and anatomies, with -gate of the gate, with -drift of the comparison; needs -origin")
	origin := fs.String("origin", "", "with -kcidb: the `name` of the CI system that submits the report, the prefix of every id (lower-case letters, digits, _)")
	aaDir := fs.String("aa", "results/aa", "with -drift: the `directory` of A/A pairs (<runstamp>-<name>-aa1.txt, -aa2.txt); the newest pair of A's machine sets the noise floor")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: report [flags] results.txt [other-boot.txt ...]\n       report -drift A.txt B.txt\n       report -gate [-fail-on 5%%|2ns] [-tolerance N] A.txt B.txt\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		if *kcidb {
			fmt.Fprintf(stderr, "report: -kcidb: no files given: nothing to report\n")
		}
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
			return 2
		}
		return 0
	}
	var files []*benchfile.File
	for _, p := range fs.Args() {
		f, err := benchfile.Read(p)
		if err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 2
		}
		files = append(files, f)
	}
	if *kcidb {
		return runKCIDB(kcidbMode{origin: *origin, gate: *gateOn, drift: *compare, tolerance: *tolerance, aaDir: *aaDir, all: *allUnits}, files, stdout, stderr)
	}
	if *passes {
		for _, f := range files {
			if sum := f.PassSummary(); sum != "" {
				fmt.Fprintf(stdout, "# passes: %s\n", sum)
			}
			if sum := f.SlowBaseSummary(); sum != "" {
				fmt.Fprintf(stdout, "# bases: %s\n", sum)
			}
		}
		return 0
	}
	if *gateOn {
		if len(files) != 2 {
			fmt.Fprintf(stderr, "report: -gate holds B to A: two files, not %d\n", len(files))
			return 2
		}
		o := gate.Options{Tolerance: *tolerance}
		if *failOn != "" {
			var err error
			if o.FailPct, o.FailNs, err = gate.ParseThreshold(*failOn); err != nil {
				fmt.Fprintf(stderr, "report: %v\n", err)
				return 2
			}
		}
		o.AA, _ = drift.FindAA(*aaDir, files[0])
		r, err := gate.Check(files[0], files[1], o)
		if err != nil {
			fmt.Fprintf(stderr, "report: -gate: %v\n", err)
			return 2
		}
		if *asJSON {
			if err := writeGateJSON(stdout, files[0], files[1], r); err != nil {
				fmt.Fprintf(stderr, "report: %v\n", err)
				return 2
			}
		} else {
			gate.Write(stdout, r)
		}
		if !r.Passed() {
			return 1
		}
		return 0
	}
	if *compare {
		if len(files) != 2 {
			fmt.Fprintf(stderr, "report: -drift compares two files, not %d\n", len(files))
			return 2
		}
		aa, _ := drift.FindAA(*aaDir, files[0])
		units := drift.Units
		if *allUnits {
			units = drift.AllUnits
		}
		if *asJSON {
			r, err := gate.Check(files[0], files[1], gate.Options{Tolerance: -1, AA: aa})
			if err != nil {
				fmt.Fprintf(stderr, "report: %v\n", err)
				return 2
			}
			if err := writeComparisonJSON(stdout, files[0], files[1], aa, units, r); err != nil {
				fmt.Fprintf(stderr, "report: %v\n", err)
				return 2
			}
			return 0
		}
		if files[0].Icount() && files[1].Icount() {
			drift.ReportExact(stdout, files[0], files[1])
			return 0
		}
		drift.Report(stdout, files[0], files[1], aa, units)
		return 0
	}
	// Anatomy files (make vmbench ANATOMY=1) are judged by mechanism,
	// results files by their figures.
	var anatomies []*benchfile.File
	files = slices.DeleteFunc(files, func(f *benchfile.File) bool {
		if mechanism.IsAnatomy(f) {
			anatomies = append(anatomies, f)
			return true
		}
		return false
	})
	nothing := !slices.ContainsFunc(files, (*benchfile.File).HasResults) && len(anatomies) == 0
	if *asJSON && !nothing {
		if err := writeVerdictsJSON(stdout, files, anatomies); err != nil {
			fmt.Fprintf(stderr, "report: %v\n", err)
			return 2
		}
		return 0
	}
	if len(files) > 0 && !*asJSON {
		verdict.Report(stdout, files)
	}
	if len(anatomies) > 0 {
		mechanism.Report(stdout, anatomies)
	}
	if nothing {
		fmt.Fprintf(stderr, "report: no results in %s: nothing to judge\n", strings.Join(fs.Args(), ", "))
		return 1
	}
	if !*draw {
		return 0
	}
	status := 0
	for _, f := range files {
		written, err := plots.Write(f, *plotDir)
		for _, w := range written {
			fmt.Fprintf(stdout, "wrote %s\n", w)
		}
		if err != nil {
			fmt.Fprintf(stderr, "report: plots of %s: %v\n", f.Path, err)
			status = 1
		}
	}
	// Across files: instruction counts per kernel, when two kernels have them.
	if w, err := plots.WriteKernels(files, *plotDir); err != nil {
		fmt.Fprintf(stderr, "report: kernel plot: %v\n", err)
		status = 1
	} else if w != "" {
		fmt.Fprintf(stdout, "wrote %s\n", w)
	}
	return status
}
