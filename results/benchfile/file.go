// Package benchfile reads the results files `go test -bench` writes for
// this suite: the configuration lines (labels) that say which machine and
// boot a file comes from, every run of every sub-benchmark, and why a
// sub-benchmark failed or was skipped, from the log lines go test prints
// with it.
//
// It sits on golang.org/x/perf/benchfmt as benchproc does, and adds what
// this suite's files need: a file is read whole, because a verdict is
// drawn from one file's runs; a line benchfmt cannot read is recorded and
// skipped, never fatal, because a failed run prints `--- FAIL` where its
// numbers would be and the other runs still count; and a selection (Sel)
// names one sub-benchmark and unit, and says why a file has no data for
// it (not run, skipped with a reason, too few of its calls free).
// It judges nothing: the claims, the verdicts, the drift and the plots
// are drawn by the packages above it.
package benchfile

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// A File is one results file as `go test -bench` wrote it: the
// configuration lines (labels) and every run of every sub-benchmark.
type File struct {
	Path string
	// Config holds the file configuration lines (kernel, mitigations,
	// retpoline, cfi, ...) in force at the first result.
	Config map[string]string
	// Runs maps a sub-benchmark's name (without the GOMAXPROCS suffix) to
	// its runs, in file order: one per -count.
	Runs  map[string][]Run
	Names []string // the keys of Runs, in file order
	// Failed maps a sub-benchmark's name to the reasons its failed runs
	// gave (one entry per failed run), Skipped to the reason a skipped one
	// gave (only `go test -v` output records skips).
	Failed, Skipped map[string][]string
	// Warnings are problems with the file itself: lines that are not
	// results, configuration that changes halfway.
	Warnings []string
	// Passes are the file's go test runs (make bench's passes), with how
	// each moved against the others; nil where they are not judged
	// (judgePasses).
	Passes []Pass
}

// A Run is one result line.
type Run struct {
	Name   Name
	Values map[string]float64 // by unit as printed (ns/op, not sec/op)
	// Pass is the go test run of the file the line came from, from 0.
	Pass int
	// Discordant says the run's pass disagreed with the file's others
	// (judgePasses): its figures are left out.
	Discordant bool
	// SlowBase says the run's paired base ran far slower than the
	// family's base runs elsewhere in the file (judgeBases): its figures
	// are left out.
	SlowBase bool
	// line is the run's line in the file, from 1.
	line int
}

// outcomeLine matches the lines go test prints for a failed or skipped
// (sub-)benchmark; on a result line they replace the numbers.
var outcomeLine = regexp.MustCompile(`--- (FAIL|SKIP): (Benchmark\S*)`)

// Read reads the results file at path (see Parse).
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse reads the contents of a results file named path. Lines benchfmt
// cannot read as results (a failed run prints `--- FAIL` where its numbers
// would be) are skipped and recorded, never fatal: the runs that succeeded
// still count. So are values that are not finite numbers (NaN, ±Inf): no
// estimate or plot can use them.
func Parse(path string, data []byte) (*File, error) {
	lines := strings.Split(string(data), "\n")
	f := &File{
		Path:    path,
		Runs:    map[string][]Run{},
		Failed:  map[string][]string{},
		Skipped: map[string][]string{},
	}
	r := benchfmt.NewReader(bytes.NewReader(data), path)
	var syntax []string
	nonFinite := 0
	watched := map[string]string{}
	pass := passOf(lines)
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			_, line := rec.Pos()
			if line < 1 || line > len(lines) || !outcomeLine.MatchString(lines[line-1]) {
				syntax = append(syntax, rec.Error())
			}
		case *benchfmt.Result:
			if f.Config == nil {
				f.Config = map[string]string{}
				for _, c := range rec.Config {
					if c.File {
						f.Config[c.Key] = string(c.Value)
					}
				}
				for _, k := range BootLabels {
					watched[k] = f.Config[k]
				}
			}
			for k, v := range watched {
				if got := rec.GetConfig(k); got != v {
					f.Warnings = append(f.Warnings, fmt.Sprintf("label %s changes halfway through the file (%q, then %q): the file mixes boots; split it", k, v, got))
					watched[k] = got
				}
			}
			run := Run{Name: ParseName(rec.Name.String()), Values: map[string]float64{}}
			if _, line := rec.Pos(); line >= 1 && line <= len(pass) {
				run.Pass, run.line = pass[line-1], line
			}
			for _, v := range rec.Values {
				unit, value := v.Unit, v.Value
				if v.OrigUnit != "" {
					unit, value = v.OrigUnit, v.OrigValue
				}
				if math.IsNaN(value) || math.IsInf(value, 0) {
					nonFinite++
					continue
				}
				run.Values[unit] = value
			}
			key := run.Name.String()
			if _, ok := f.Runs[key]; !ok {
				f.Names = append(f.Names, key)
			}
			f.Runs[key] = append(f.Runs[key], run)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if f.Config == nil {
		f.Config = map[string]string{}
	}
	if len(syntax) > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%d lines are not results and were skipped, e.g. %s", len(syntax), syntax[0]))
	}
	if nonFinite > 0 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%d values are not finite numbers (NaN or Inf) and were left out", nonFinite))
	}
	f.readOutcomes(lines)
	f.judgePasses()
	f.judgeBases()
	return f, nil
}

// readOutcomes collects the failed and skipped sub-benchmarks and their
// reasons: the indented log lines go test prints right after a
// `--- FAIL`/`--- SKIP` line, or (with -v) right before it.
func (f *File) readOutcomes(lines []string) {
	indented := func(s string) bool { return strings.HasPrefix(s, "    ") && strings.TrimSpace(s) != "" }
	own := map[string][]string{}
	for i, l := range lines {
		m := outcomeLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var reason []string
		for j := i + 1; j < len(lines) && indented(lines[j]); j++ {
			reason = append(reason, logText(lines[j]))
		}
		if len(reason) == 0 {
			var before []string
			for j := i - 1; j >= 0 && indented(lines[j]); j-- {
				before = append([]string{logText(lines[j])}, before...)
			}
			reason = before
		}
		name := ParseName(m[2]).String()
		why := strings.Join(reason, "; ")
		if m[1] == "SKIP" {
			f.Skipped[name] = append(f.Skipped[name], why)
			continue
		}
		// A failed run prints `--- FAIL` in place of its numbers, then its
		// parent may repeat the failure on a line of its own: count those
		// only for names that have no failure in place of numbers (-v
		// output prints them on lines of their own).
		if strings.HasPrefix(l, "---") {
			own[name] = append(own[name], why)
		} else {
			f.Failed[name] = append(f.Failed[name], why)
		}
	}
	// Sub-benchmarks before families: whether a family's line counts
	// depends on whether a child of it failed.
	names := slices.Sorted(maps.Keys(own))
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Compare(len(ParseName(b).Keys), len(ParseName(a).Keys))
	})
	for _, name := range names {
		whys := own[name]
		if _, ok := f.Failed[name]; ok {
			continue
		}
		// The family's own FAIL line only says a sub-benchmark failed.
		if n := ParseName(name); len(n.Keys) == 0 && f.hasFailedChild(n.Family) {
			continue
		}
		f.Failed[name] = whys
	}
}

func (f *File) hasFailedChild(family string) bool {
	for n := range f.Failed {
		if strings.HasPrefix(n, family+"/") {
			return true
		}
	}
	return false
}

// logText strips the indentation and the file:line prefix of a t.Log line.
func logText(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ": "); i > 0 && strings.Contains(s[:i], ".go:") {
		s = s[i+2:]
	}
	return s
}

// Stem is the file name without directory and extension.
func (f *File) Stem() string {
	return strings.TrimSuffix(filepath.Base(f.Path), filepath.Ext(f.Path))
}

// Emulated reports whether the file comes from a guest whose CPU was
// emulated (QEMU TCG, virt: tcg, or TCG counting instructions, virt:
// tcg-icount): its timings are not measurements.
func (f *File) Emulated() bool { v := f.Label("virt"); return v == "tcg" || v == "tcg-icount" }

// Icount reports whether the file holds instruction counts (QEMU's TCG
// with -icount, virt: tcg-icount): its units count instructions where a
// timing file's count ns (instrs/op, delta-instrs/op, delta-instrs/prog)
// and it has no ns/op.
func (f *File) Icount() bool { return f.Label("virt") == "tcg-icount" }

// HasResults reports whether the file has any result line.
func (f *File) HasResults() bool { return len(f.Names) > 0 }

// MissingLabels are the labels of keys that the file lacks.
func (f *File) MissingLabels(keys []string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := f.Config[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// Label returns a configuration label, or "absent" when the file has none.
func (f *File) Label(k string) string {
	if v, ok := f.Config[k]; ok {
		return v
	}
	return "absent"
}
