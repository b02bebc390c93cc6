// Package drift compares two results files of one machine row by row:
// how far all rows moved together (a VM can run a whole pass slower, the
// same way for every row, which benchstat's test calls a difference),
// which rows moved beyond that, and which of those beyond the machine's
// own noise, measured by an A/A pair (two runs of one commit: Floor).
// Two instruction-count files compare as exact counts instead
// (ReportExact): their rows do not vary from run to run, so a test of
// significance has nothing to say. It is what make compare prints after
// benchstat's table; it draws no verdict on a claim.
package drift

import (
	"math"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"

	"golang.org/x/perf/benchmath"
)

// A Comparison is how far the rows of two results files moved together in one
// unit. A VM can run a whole `make bench` slower than the run before it,
// every row the same way, which passes cannot cancel and benchstat's test
// then calls different (docs/method.md#the-estimators). The rows' median
// move says how large that shared part is; a row whose move is still
// significant once the shared part is taken out moved by itself.
type Comparison struct {
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

// A RowMove is one row's move between the files, and its test's p-value.
type RowMove struct {
	Name string
	Move float64
	P    float64
}

// Moves is every row's move beyond the shared shift, with its test's
// p-value, in A's order.
func (c Comparison) Moves() []RowMove { return c.moves }

// driftAlpha is benchstat's default significance level.
const driftAlpha = 0.05

// Compare compares a and b in unit: rows both hold runs of with a positive
// median in a. ok is false when they share no such row. With a floor (an
// A/A pair's, in the same unit), Noise lists the rows beyond it.
func Compare(a, b *benchfile.File, unit string, floor *Floor) (s Comparison, ok bool) {
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
	s.Rows = len(rows)
	s.Median, s.Lo, s.Hi = stat.MedianCI(moves)
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
