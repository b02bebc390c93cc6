package drift

import (
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
}

// Of is the floor of row name: Machine, or the row's own A/A move when
// that was larger.
func (f *Floor) Of(name string) float64 {
	if f == nil {
		return 0
	}
	return math.Max(f.Machine, math.Abs(f.Row[name]))
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
	fl := &Floor{A: aa1.Path, B: aa2.Path, Row: map[string]float64{}}
	var abs []float64
	for _, m := range d.moves {
		fl.Row[m.Name] = m.Move
		abs = append(abs, math.Abs(m.Move))
	}
	fl.Machine = stats.Sample{Xs: abs}.Quantile(floorQuantile)
	return fl, true
}

// FindAA is the newest A/A pair in dir made on the machine of f: files
// <runstamp>-<name>-aa1.txt and <runstamp>-<name>-aa2.txt of one name
// whose cpu-vendor, cpu-family-model and virt labels are f's. ok is false
// when dir has none.
func FindAA(dir string, f *benchfile.File) (aa [2]*benchfile.File, ok bool) {
	ones, _ := filepath.Glob(filepath.Join(dir, "*-aa1.txt"))
	slices.Sort(ones)
	slices.Reverse(ones)
	for _, one := range ones {
		_, rest, found := strings.Cut(filepath.Base(one), "-")
		if !found {
			continue
		}
		twos, _ := filepath.Glob(filepath.Join(dir, "*-"+strings.TrimSuffix(rest, "-aa1.txt")+"-aa2.txt"))
		if len(twos) == 0 {
			continue
		}
		a1, err1 := benchfile.Read(one)
		a2, err2 := benchfile.Read(twos[len(twos)-1])
		if err1 != nil || err2 != nil || !sameMachine(a1, f) || !sameMachine(a2, f) {
			continue
		}
		return [2]*benchfile.File{a1, a2}, true
	}
	return aa, false
}

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
