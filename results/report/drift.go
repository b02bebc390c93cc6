package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// A Drift is how far the rows of two results files moved together in one
// unit. A VM can run a whole `make bench` slower per cycle than the run
// before it, every row the same way (1% in cycles/op, 5% in ns/op as the
// host changed its clock, between two runs of one commit on the Intel Xeon
// 6/167 KVM guest: results/README.md): passes cannot cancel that, and
// benchstat's test then calls most rows of the two files different. The
// rows' median move says how large that shared part is; a row whose move
// is still significant once the shared part is taken out moved by itself.
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
// median in a. ok is false when they share no such row.
func Drifts(a, b *File, unit string) (s Drift, ok bool) {
	s.Unit = unit
	type row struct {
		name   string
		av, bv []float64
		move   float64
	}
	var rows []row
	for _, name := range a.Names {
		av, bv := values(a.Runs[name], unit), values(b.Runs[name], unit)
		if len(av) == 0 || len(bv) == 0 {
			continue
		}
		ma := median(av)
		if !(ma > 0) {
			continue
		}
		rows = append(rows, row{name, av, bv, median(bv)/ma - 1})
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
		if m.P < driftAlpha {
			s.Beyond = append(s.Beyond, m)
		}
		if s.Largest.Name == "" || math.Abs(m.Move) > math.Abs(s.Largest.Move) {
			s.Largest = m
		}
	}
	return s, true
}

// values is the runs' values in unit, in file order (none for unit "").
func values(runs []Run, unit string) []float64 {
	var vs []float64
	for _, r := range runs {
		if v, ok := r.Values[unit]; ok {
			vs = append(vs, v)
		}
	}
	return vs
}

func median(vs []float64) float64 { return stats.Sample{Xs: vs}.Quantile(0.5) }

// driftUnits are the units a shift is reported in, where the files have
// them: cycles/op first, the one to compare across runs on a VM.
var driftUnits = []string{"cycles/op", "ns/op", "instrs/op"}

// ReportDrift prints, for each unit both files have, how far their rows
// moved together and which rows moved beyond that.
func ReportDrift(w io.Writer, a, b *File) {
	fmt.Fprintf(w, "How far the rows moved together from A=%s to B=%s\n", a.Path, b.Path)
	fmt.Fprintf(w, "(the median of the rows' moves; a row beyond it is one benchstat's test, p < %.2g,\n"+
		"still calls different once B is divided by that shift: expect ~%.0f%% of rows by chance)\n", driftAlpha, 100*driftAlpha)
	for _, u := range driftUnits {
		s, ok := Drifts(a, b, u)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d rows; shared shift %+.2f%% [%+.2f%%, %+.2f%%], %d of %d rows moved that way\n",
			u, s.Rows, 100*s.Median, 100*s.Lo, 100*s.Hi, s.Same, s.Rows)
		fmt.Fprintf(w, "  different as they stand: %d of %d rows; beyond the shared shift: %d; furthest from it: %s %+.2f%%\n",
			s.Different, s.Rows, len(s.Beyond), s.Largest.Name, 100*s.Largest.Move)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range s.Beyond {
			fmt.Fprintf(tw, "    %s\t%+.2f%% beyond the shift\tp=%.3f\n", r.Name, 100*r.Move, r.P)
		}
		tw.Flush()
	}
}
