package drift

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"bpfbench/results/benchfile"

	"github.com/aclements/go-moremath/stats"
)

// A Floor is the smallest move of a row that one machine lets two runs of
// one commit tell apart: from an A/A pair made on it, the 95th percentile
// of its rows' moves beyond their shared shift, or a row's own move there
// where that was larger.
type Floor struct {
	// A, B name the A/A pair's files.
	A, B string
	// Machine is the 95th percentile of the pair's rows' moves (their
	// absolute values); Row the moves of each row.
	Machine float64
	Row     map[string]float64
	// Shift is the pair's own shared shift: B's rows over A's, all
	// together (Comparison.Median).
	Shift float64
}

// Of is the floor of row name: Machine, or the row's own A/A move when
// that was larger.
func (f *Floor) Of(name string) float64 {
	if f == nil {
		return 0
	}
	return math.Max(f.Machine, math.Abs(f.Row[name]))
}

// Shared is the shared shift two runs of one commit make on the machine:
// the pair's own, or Machine where that is larger. Only a shared shift
// beyond it is the kernels' (docs/method.md#the-noise-floor-between-runs).
func (f *Floor) Shared() float64 {
	if f == nil {
		return 0
	}
	return math.Max(f.Machine, math.Abs(f.Shift))
}

// floorQuantile is the quantile of an A/A pair's row moves that Floor
// takes as the machine's.
const floorQuantile = 0.95

// NewFloor is the floor in unit of the A/A pair aa1, aa2 (ok false when
// they share no row in it).
func NewFloor(aa1, aa2 *benchfile.File, unit string) (*Floor, bool) {
	d, ok := Compare(aa1, aa2, unit, nil)
	if !ok {
		return nil, false
	}
	fl := &Floor{A: aa1.Path, B: aa2.Path, Row: map[string]float64{}, Shift: d.Median}
	var abs []float64
	for _, m := range d.moves {
		fl.Row[m.Name] = m.Move
		abs = append(abs, math.Abs(m.Move))
	}
	fl.Machine = stats.Sample{Xs: abs}.Quantile(floorQuantile)
	return fl, true
}

// FindAA is the newest A/A pair in dir made on the machine of f: an
// <runstamp>-...-aa1.txt file whose cpu-vendor, cpu-family-model and virt
// labels are f's, and the first -aa2.txt file after it of the same
// machine, kernel and commit. Files are paired by their labels, never by
// their names: every VM's host is called vm, so two machines' pairs can
// share a name. ok is false when dir has none.
func FindAA(dir string, f *benchfile.File) (aa [2]*benchfile.File, ok bool) {
	read := func(pattern string) []*benchfile.File {
		paths, _ := filepath.Glob(filepath.Join(dir, pattern))
		slices.Sort(paths)
		var files []*benchfile.File
		for _, p := range paths {
			if g, err := benchfile.Read(p); err == nil && sameMachine(g, f) {
				files = append(files, g)
			}
		}
		return files
	}
	ones, twos := read("*-aa1.txt"), read("*-aa2.txt")
	// A pair of f's own kernel build first: another build's noise is
	// another boot's (Foreign says so).
	for _, own := range []bool{true, false} {
		for i := len(ones) - 1; i >= 0; i-- {
			one := ones[i]
			if own && one.Label("kernel") != f.Label("kernel") {
				continue
			}
			for _, two := range twos {
				if filepath.Base(two.Path) > filepath.Base(one.Path) &&
					two.Label("kernel") == one.Label("kernel") && commit(two) == commit(one) {
					return [2]*benchfile.File{one, two}, true
				}
			}
		}
	}
	return aa, false
}

// Foreign says, in a sentence, when the A/A pair aa was made under
// another kernel build than f (FindAA falls back to one when the machine
// has none of f's), and what would make one of f's own; "" when it was
// not.
func Foreign(f *benchfile.File, aa [2]*benchfile.File) string {
	if aa[0] == nil || aa[0].Label("kernel") == f.Label("kernel") {
		return ""
	}
	return fmt.Sprintf("the pair ran kernel %s, %s ran %s: its noise is another boot's; make aa on this boot makes a pair of %s's kernel",
		aa[0].Label("kernel"), filepath.Base(f.Path), f.Label("kernel"), filepath.Base(f.Path))
}

// commit is the commit a file was made at: a -dirty suffix says the tree
// had changes, which the second run of a pair often saw (its first run's
// results) and which change no code.
func commit(f *benchfile.File) string { return strings.TrimSuffix(f.Label("commit"), "-dirty") }

// machineLabels say which machine a file was made on, for its noise.
var machineLabels = []string{"cpu-vendor", "cpu-family-model", "virt"}

func sameMachine(a, b *benchfile.File) bool {
	for _, k := range machineLabels {
		if a.Label(k) != b.Label(k) {
			return false
		}
	}
	return true
}
