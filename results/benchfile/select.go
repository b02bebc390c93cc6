package benchfile

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"bpfbench/bpf/units"
)

// CountedUnit is the unit an instruction-count file reports for a timing
// unit: delta-ns/op is delta-instrs/op there.
func CountedUnit(u string) string {
	if c, ok := units.Counted(u); ok {
		return c
	}
	return u
}

// The errors of Select that say a file has no values for a selection;
// anything else is a selection that names too little.
var (
	// ErrNoData: the selection matched nothing in the file, or a row
	// without the unit.
	ErrNoData = errors.New("no data in this file")
	// ErrContended: every run of the row was measured on a contended
	// core.
	ErrContended = errors.New("no uncontended run")
)

// Select returns the values of unit for the one sub-benchmark matching
// family and keys. Keys not named must not distinguish two
// sub-benchmarks: a selection that matches several is an error naming
// the key that tells them apart.
func (f *File) Select(s Sel) (Name, []float64, error) {
	var names []string
	for _, n := range f.Names {
		if s.Matches(f.Runs[n][0].Name) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		if why := f.skipReason(s); why != "" {
			return Name{}, nil, &SkippedError{why}
		}
		if f.ran(s) {
			return Name{}, nil, &SkippedError{fmt.Sprintf("%s ran without %s: the row was skipped (go test -v records why; "+
				"a kernel that refuses a program type or hook skips its rows)", s.Family, s.Name.Short())}
		}
		return Name{}, nil, fmt.Errorf("%w: %s is not in it", ErrNoData, s)
	}
	if len(names) > 1 {
		return Name{}, nil, fmt.Errorf("%s matches %d sub-benchmarks (%s, ...): name more keys", s, len(names), strings.Join(names[:2], ", "))
	}
	xs := Values(f.Runs[names[0]], s.Unit)
	if len(xs) == 0 {
		if n, runs := f.Contended(names[0]); n > 0 && n == runs {
			return Name{}, nil, fmt.Errorf("%w: every run of %s in %s had %s: its figures are not the program's", ErrContended, names[0], f.Stem(), units.TooFewFree())
		}
		return Name{}, nil, fmt.Errorf("%w: %s reports no %s", ErrNoData, names[0], s.Unit)
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

// CIUnit is the metric in which the suite reports, next to unit, the
// per-run 95% confidence half-width of a paired difference, or "".
func CIUnit(unit string) string { return ci95Units[unit] }

// Within returns the per-run 95% confidence half-widths the suite
// reported for s's unit (over the paired rounds of each run), or nil.
func (f *File) Within(s Sel) []float64 {
	c := s
	c.Unit = CIUnit(s.Unit)
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

// A SkippedError says the file shows the kernel could not run what a
// selection wants: the row was skipped, with the reason go test -v
// recorded, or its family ran without it.
type SkippedError struct{ Reason string }

// Error is the reason.
func (e *SkippedError) Error() string { return e.Reason }

// Values is the runs' values in unit, in file order (none for unit ""),
// leaving out runs with too few free calls (Run.Contended), the runs of
// passes that disagreed with their file (Run.Discordant) and runs whose
// paired base ran slow (Run.SlowBase): their figures are not the
// program's.
func Values(runs []Run, unit string) []float64 {
	var vs []float64
	for _, r := range runs {
		if v, ok := r.Values[unit]; ok && !r.LeftOut() {
			vs = append(vs, v)
		}
	}
	return vs
}

// LeftOut says every reader leaves the run's figures out: too few of its
// calls were free, its pass disagreed with the file, or its base ran slow.
func (r Run) LeftOut() bool { return r.Contended() || r.Discordant || r.SlowBase }

// Contended says too few of the run's calls were free for its figures to
// be the program's: more than units.MaxContended of them were contended
// (docs/method.md#contention). In a file of the old rule (OldRule) the
// same share, counted differently, left the row's figures to its least
// contended tenth: not the program's either.
func (r Run) Contended() bool {
	v, ok := r.Values["contended-frac"]
	return ok && v > units.MaxContended
}

// OldRule says the file's contended-frac was judged by the rule before
// the judge (no units.ContentionLabel line): the share of calls in which a reference
// moved, whatever the program did.
func (f *File) OldRule() bool {
	if f.Config[units.ContentionLabel] != "" {
		return false
	}
	for _, runs := range f.Runs {
		for _, r := range runs {
			if _, ok := r.Values["contended-frac"]; ok {
				return true
			}
		}
	}
	return false
}

// ContendedRuns counts the runs of f with too few free calls (Run.Contended),
// and all its runs.
func (f *File) ContendedRuns() (n, all int) {
	for _, name := range f.Names {
		for _, r := range f.Runs[name] {
			all++
			if r.Contended() {
				n++
			}
		}
	}
	return n, all
}

// Contended counts the runs of name that had too few free calls
// (contended-frac above units.MaxContended), and its runs.
func (f *File) Contended(name string) (n, runs int) { return f.count(name, Run.Contended) }

// count counts the runs of name that is says yes to, and its runs.
func (f *File) count(name string, is func(Run) bool) (n, runs int) {
	for _, r := range f.Runs[name] {
		if is(r) {
			n++
		}
	}
	return n, len(f.Runs[name])
}
