package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"

	"bpfbench/bpf/units"
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
}

// A Run is one result line.
type Run struct {
	Name   Name
	Values map[string]float64 // by unit as printed (ns/op, not sec/op)
}

// A Name is a sub-benchmark name split into the family and its
// /key=value parts.
type Name struct {
	Family string            // "BenchmarkDispatcher"
	Keys   map[string]string // dispatcher=k0, fill=none, prog=xdp
	Order  []string          // the keys as they appear in the name
}

func (n Name) String() string {
	var b strings.Builder
	b.WriteString(n.Family)
	for _, k := range n.Order {
		b.WriteString("/" + k)
		if v := n.Keys[k]; v != "" {
			b.WriteString("=" + v)
		}
	}
	return b.String()
}

// Short is the name without the family.
func (n Name) Short() string {
	return strings.TrimPrefix(strings.TrimPrefix(n.String(), n.Family), "/")
}

// ParseName splits "BenchmarkX/a=1/b=2" (with or without the Benchmark
// prefix and the -<GOMAXPROCS> suffix) into its family and keys. A part
// without '=' is kept as a key with an empty value.
func ParseName(s string) Name {
	if !strings.HasPrefix(s, "Benchmark") {
		s = "Benchmark" + s
	}
	s = stripProcs(s)
	parts := strings.Split(s, "/")
	n := Name{Family: parts[0], Keys: map[string]string{}}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		n.Keys[k] = v
		n.Order = append(n.Order, k)
	}
	return n
}

var procsSuffix = regexp.MustCompile(`-[0-9]+$`)

// stripProcs removes the -<GOMAXPROCS> suffix go test appends to a name.
// The suite's style forbids values ending in -<digits>, so the suffix is
// never part of a value.
func stripProcs(s string) string { return procsSuffix.ReplaceAllString(s, "") }

// outcomeLine matches the lines go test prints for a failed or skipped
// (sub-)benchmark; on a result line they replace the numbers.
var outcomeLine = regexp.MustCompile(`--- (FAIL|SKIP): (Benchmark\S*)`)

// ReadFile reads a results file (see Parse).
func ReadFile(path string) (*File, error) {
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
				for _, k := range bootLabels {
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
	for name, whys := range own {
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

// noTiming says why no timing verdict may be drawn from the file, or "":
// it comes from an emulated guest, counts instructions, or fails its A/A
// control.
func (f *File) noTiming() string {
	switch {
	case f.Icount():
		return f.Stem() + " holds instruction counts (virt: tcg-icount), not times: it can show a path getting longer or shorter, never what it costs"
	case f.Emulated():
		return f.Stem() + " comes from an emulated guest (virt: " + f.Label("virt") + "): its timings show that the code ran, they are not measurements"
	}
	return f.ControlFails()
}

// instrsUnit is the unit an instruction-count file reports for a timing
// unit: delta-ns/op is delta-instrs/op there.
func instrsUnit(u string) string {
	if c, ok := units.Counted(u); ok {
		return c
	}
	return u
}

// Label returns a configuration label, or "absent" when the file has none.
func (f *File) Label(k string) string {
	if v, ok := f.Config[k]; ok {
		return v
	}
	return "absent"
}

// errNoData says a selection matched nothing in a file.
var errNoData = errors.New("no data in this file")

// errContended says every run of a row was measured on a contended core.
var errContended = errors.New("no uncontended run")

// Select returns the values of unit for the one sub-benchmark matching
// family and keys. Keys not named must not distinguish two
// sub-benchmarks: a selection that matches several is an error naming
// the key that tells them apart.
func (f *File) Select(s Sel) (Name, []float64, error) {
	var names []string
	for _, n := range f.Names {
		if s.matches(f.Runs[n][0].Name) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		if why := f.skipReason(s); why != "" {
			return Name{}, nil, &notMeasurable{why}
		}
		if f.ran(s) {
			return Name{}, nil, &notMeasurable{fmt.Sprintf("%s ran without %s: the row was skipped (go test -v records why; "+
				"a kernel that refuses a program type or hook skips its rows)", s.Family, s.Name.Short())}
		}
		return Name{}, nil, fmt.Errorf("%w: %s is not in it", errNoData, s)
	}
	if len(names) > 1 {
		return Name{}, nil, fmt.Errorf("%s matches %d sub-benchmarks (%s, ...): name more keys", s, len(names), strings.Join(names[:2], ", "))
	}
	xs := values(f.Runs[names[0]], s.Unit)
	if len(xs) == 0 {
		if n, runs := contended(f, names[0]); n > 0 && n == runs {
			return Name{}, nil, fmt.Errorf("%w: every run of %s in %s was measured on a contended core (contended-frac above %.1f): its figures are not the program's", errContended, names[0], f.Stem(), maxContended)
		}
		return Name{}, nil, fmt.Errorf("%w: %s reports no %s", errNoData, names[0], s.Unit)
	}
	return f.Runs[names[0]][0].Name, xs, nil
}

// ci95Units names the metric holding the per-run 95% confidence
// half-width the suite reports next to a paired difference. An
// instruction-count file's are named the same with instrs for ns
// (delta-instrs/op: delta-ci95-instrs).
var ci95Units = map[string]string{
	"delta-ns/op":      "delta-ci95-ns",
	"delta-ns/pkt":     "delta-ci95-ns",
	"rx-ns/pkt":        "rx-ci95-ns",
	"delta-instrs/op":  "delta-ci95-instrs",
	"delta-instrs/pkt": "delta-ci95-instrs",
	"rx-instrs/pkt":    "rx-ci95-instrs",
}

// Within returns the per-run 95% confidence half-widths the suite
// reported for s's unit (over the paired rounds of each run), or nil.
func (f *File) Within(s Sel) []float64 {
	c := s
	c.Unit = ci95Units[s.Unit]
	if c.Unit == "" {
		return nil
	}
	_, xs, err := f.Select(c)
	if err != nil {
		return nil
	}
	return xs
}

// ran reports whether the file has rows of s's family sharing s's first
// key: the family ran that part of its table, so a missing row of it was
// skipped, not filtered out by -bench.
func (f *File) ran(s Sel) bool {
	if len(s.Order) == 0 {
		return false
	}
	k := s.Order[0]
	for _, n := range f.Names {
		nm := f.Runs[n][0].Name
		if nm.Family == s.Family && nm.Keys[k] == s.Keys[k] {
			return true
		}
	}
	return false
}

// skipReason is why the sub-benchmarks a selection wants were skipped,
// if the file says (go test -v records skips).
func (f *File) skipReason(s Sel) string {
	var names []string
	for n := range f.Skipped {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s.coveredBy(ParseName(n)) && f.Skipped[n][0] != "" {
			return fmt.Sprintf("%s skipped: %s", n, f.Skipped[n][0])
		}
	}
	return ""
}

// A notMeasurable error says the file shows the kernel could not run
// what a claim needs.
type notMeasurable struct{ why string }

func (e *notMeasurable) Error() string { return e.why }
