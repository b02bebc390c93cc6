package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"
)

// A Drift is how far the rows of two results files moved together in one
// unit. A VM can run a whole `make bench` slower than the run before it,
// every row the same way, which passes cannot cancel and benchstat's test
// then calls different (docs/method.md#the-estimators). The rows' median
// move says how large that shared part is; a row whose move is still
// significant once the shared part is taken out moved by itself.
type Drift struct {
	Unit string
	// Rows is the number of rows both files hold runs of.
	Rows int
	// Median is the rows' median move (B's median over A's, minus 1) and
	// Lo, Hi its 95% interval (the order statistics over rows).
	Median, Lo, Hi float64
	// Same is the rows that moved the way the median did.
	Same int
	// Different is the number of rows benchstat's test (Mann-Whitney U,
	// p < driftAlpha) calls different as they stand, Beyond the rows it
	// still calls different with B's runs divided by 1+Median.
	Different int
	Beyond    []RowMove
	// Largest is the row that moved furthest from the shared shift,
	// significant or not.
	Largest RowMove
	// Noise, when an A/A pair of the machine was given, is the rows
	// beyond the shared shift whose move also exceeds what that pair
	// allows (Floor): the rows that moved by more than the machine's
	// noise.
	Noise []RowMove
	// moves is every row's move beyond the shared shift.
	moves []RowMove
	// Floor is the A/A pair's floors, nil without one.
	Floor *Floor
}

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
	d, ok := Drifts(aa1, aa2, unit, nil)
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

// A RowMove is one row's move between the files, and its test's p-value.
type RowMove struct {
	Name string
	Move float64
	P    float64
}

// driftAlpha is benchstat's default significance level.
const driftAlpha = 0.05

// Drifts compares a and b in unit: rows both hold runs of with a positive
// median in a. ok is false when they share no such row. With a floor (an
// A/A pair's, in the same unit), Noise lists the rows beyond it.
func Drifts(a, b *benchfile.File, unit string, floor *Floor) (s Drift, ok bool) {
	s.Floor = floor
	s.Unit = unit
	type row struct {
		name   string
		av, bv []float64
		move   float64
	}
	var rows []row
	for _, name := range a.Names {
		av, bv := benchfile.Values(a.Runs[name], unit), benchfile.Values(b.Runs[name], unit)
		if len(av) == 0 || len(bv) == 0 {
			continue
		}
		ma := stat.Median(av)
		if !(ma > 0) {
			continue
		}
		rows = append(rows, row{name, av, bv, stat.Median(bv)/ma - 1})
	}
	if len(rows) == 0 {
		return s, false
	}
	moves := make([]float64, len(rows))
	for i, r := range rows {
		moves[i] = r.move
	}
	sum := benchmath.AssumeNothing.Summary(benchmath.NewSample(moves, &benchmath.DefaultThresholds), 0.95)
	s.Rows, s.Median, s.Lo, s.Hi = len(rows), sum.Center, sum.Lo, sum.Hi
	test := func(av, bv []float64) float64 {
		c := benchmath.AssumeNothing.Compare(benchmath.NewSample(av, &benchmath.DefaultThresholds), benchmath.NewSample(bv, &benchmath.DefaultThresholds))
		return c.P
	}
	for _, r := range rows {
		if math.Signbit(r.move) == math.Signbit(s.Median) {
			s.Same++
		}
		if test(r.av, r.bv) < driftAlpha {
			s.Different++
		}
		scaled := make([]float64, len(r.bv))
		for i, v := range r.bv {
			scaled[i] = v / (1 + s.Median)
		}
		m := RowMove{r.name, (1+r.move)/(1+s.Median) - 1, test(r.av, scaled)}
		s.moves = append(s.moves, m)
		if m.P < driftAlpha {
			s.Beyond = append(s.Beyond, m)
			if floor != nil && math.Abs(m.Move) > floor.Of(m.Name) {
				s.Noise = append(s.Noise, m)
			}
		}
		if s.Largest.Name == "" || math.Abs(m.Move) > math.Abs(s.Largest.Move) {
			s.Largest = m
		}
	}
	return s, true
}

// driftUnits are the units a shift is reported in, where the files have
// them: cycles/op first, the one to compare across runs on a VM; ns/op,
// which moves with the host's clock rate too, with -all.
var driftUnits = []string{"cycles/op", "instrs/op"}

// allDriftUnits are driftUnits and ns/op.
var allDriftUnits = []string{"cycles/op", "ns/op", "instrs/op"}

// ReportDrift prints, for each unit both files have, how far their rows
// moved together and which rows moved beyond that; with an A/A pair of
// the machine (aa, nil without), which of those moved beyond its noise.
func ReportDrift(w io.Writer, a, b *benchfile.File, aa [2]*benchfile.File, units []string) {
	fmt.Fprintf(w, "The shift all rows share from A to B, the rows beyond it (benchstat's test, p < %.2g, on B over the shift), and the machine's noise\n", driftAlpha)
	for _, f := range []*benchfile.File{a, b} {
		if n, all := f.ContendedRuns(); n > 0 {
			fmt.Fprintf(w, "%s: %d of %d row-runs never saw an uncontended core (contended-frac above %.1f): left out\n", filepath.Base(f.Path), n, all, benchfile.MaxContended)
		}
	}
	if aa[0] != nil {
		fmt.Fprintf(w, "noise floor: the A/A pair %s, %s\n", filepath.Base(aa[0].Path), filepath.Base(aa[1].Path))
	} else {
		fmt.Fprintf(w, "no A/A pair of this machine (cpu-vendor, cpu-family-model, virt) in results/aa/: no noise floor; make one with make aa\n")
	}
	for _, u := range units {
		var floor *Floor
		if aa[0] != nil {
			floor, _ = NewFloor(aa[0], aa[1], u)
		}
		s, ok := Drifts(a, b, u, floor)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%s: %d rows; shared shift %+.2f%% [%+.2f%%, %+.2f%%], %d of %d rows moved that way\n",
			u, s.Rows, 100*s.Median, 100*s.Lo, 100*s.Hi, s.Same, s.Rows)
		fmt.Fprintf(w, "  different as they stand: %d of %d rows; beyond the shared shift: %d; furthest from it: %s %+.2f%%\n",
			s.Different, s.Rows, len(s.Beyond), s.Largest.Name, 100*s.Largest.Move)
		if floor != nil {
			fmt.Fprintf(w, "  beyond the machine's noise (A/A floor %.2f%%, more for rows noisier there): %d of %d rows\n",
				100*floor.Machine, len(s.Noise), s.Rows)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range s.Beyond {
			verdict := ""
			if floor != nil {
				verdict = "within the noise"
				if math.Abs(r.Move) > floor.Of(r.Name) {
					verdict = "BEYOND THE NOISE"
				}
				verdict = fmt.Sprintf("\tfloor %.2f%%: %s", 100*floor.Of(r.Name), verdict)
			}
			fmt.Fprintf(tw, "    %s\t%+.2f%% beyond the shift\tp=%.3f%s\n", r.Name, 100*r.Move, r.P, verdict)
		}
		tw.Flush()
	}
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
