package benchfile

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/stats"
)

// The passes of one file are one commit on one boot (make bench runs the
// suite in passes, a go test run each). A pass whose rows all moved
// together, far beyond how the other passes differ, ran beside a
// neighbour the contention judge could not see in its calls: its figures
// are the neighbour's as much as the kernel's, and every reader leaves it
// out (Values), as it does a row with too few free calls.
// docs/method.md#passes-that-disagree is the rationale.

// A Pass is one go test run of a file: what its rows did against the
// same rows in the file's other passes.
type Pass struct {
	// Shift is the median over the pass's rows of each row's move from
	// its median over the file's passes (a ratio less 1).
	Shift float64
	// Rows is how many rows the shift is the median of.
	Rows int
	// Discordant says the pass moved beyond the others' spread
	// (discordLimit): its runs are left out.
	Discordant bool
}

// PassUnits are the units a pass's shift is taken in, the first a file
// has: cycles/op cancels the clock rate, which moves whole passes too.
var PassUnits = []string{"cycles/op", "ns/op"}

const (
	// minPasses is the fewest passes that can tell which one disagrees:
	// of three, one might as well be the two others' odd one out.
	minPasses = 4
	// minPassRows is the fewest rows a pass's shift is taken over.
	minPassRows = 5
	// discordSpreads is how many of the passes' robust standard
	// deviations a pass's shift must lie from their median to disagree,
	// and minDiscord the least such distance: a file whose passes agree
	// within a fraction of a percent leaves none out for a move of 1-2%,
	// which the noise floor is about.
	discordSpreads = 5
	minDiscord     = 0.03
)

// passOf is, for each line of a file (0-based), which pass it belongs
// to: a go test run begins with its goos line.
func passOf(lines []string) []int {
	pass := make([]int, len(lines))
	p := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "goos: ") {
			p++
		}
		pass[i] = max(p, 0)
	}
	return pass
}

// judgePasses sets f.Passes and marks the runs of discordant passes. A
// file of fewer than minPasses passes, or of counted or emulated runs
// (an instruction count is the same in every pass), is not judged.
func (f *File) judgePasses() {
	if f.Icount() || f.Emulated() {
		return
	}
	unit := ""
	for _, u := range PassUnits {
		if f.hasUnit(u) {
			unit = u
			break
		}
	}
	if unit == "" {
		return
	}
	n := 0
	for _, runs := range f.Runs {
		for _, r := range runs {
			n = max(n, r.Pass+1)
		}
	}
	if n < minPasses {
		return
	}
	moves := make([][]float64, n)
	for _, name := range f.Names {
		var xs []float64
		for _, r := range f.Runs[name] {
			if v, ok := r.Values[unit]; ok && !r.Contended() && v > 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) < minPasses-1 {
			continue
		}
		med := stats.Sample{Xs: xs}.Quantile(0.5)
		for _, r := range f.Runs[name] {
			if v, ok := r.Values[unit]; ok && !r.Contended() && v > 0 {
				moves[r.Pass] = append(moves[r.Pass], v/med-1)
			}
		}
	}
	f.Passes = make([]Pass, n)
	var shifts []float64
	for p, m := range moves {
		f.Passes[p].Rows = len(m)
		if len(m) >= minPassRows {
			f.Passes[p].Shift = stats.Sample{Xs: m}.Quantile(0.5)
			shifts = append(shifts, f.Passes[p].Shift)
		}
	}
	if len(shifts) < minPasses {
		return
	}
	center, limit := discordLimit(shifts)
	for p := range f.Passes {
		ps := &f.Passes[p]
		ps.Discordant = ps.Rows >= minPassRows && math.Abs(ps.Shift-center) > limit
	}
	for _, runs := range f.Runs {
		for i := range runs {
			runs[i].Discordant = f.discordant(runs[i].Pass)
		}
	}
}

// discordant says whether pass p (from 0) disagreed with the file.
func (f *File) discordant(p int) bool { return p < len(f.Passes) && f.Passes[p].Discordant }

// discordLimit is the median of the passes' shifts and how far from it a
// pass's shift lies when it disagrees: discordSpreads robust standard
// deviations of the shifts (1.4826 times their median absolute
// deviation), or minDiscord, whichever is more.
func discordLimit(shifts []float64) (center, limit float64) {
	center = stats.Sample{Xs: shifts}.Quantile(0.5)
	dev := make([]float64, len(shifts))
	for i, s := range shifts {
		dev[i] = math.Abs(s - center)
	}
	mad := stats.Sample{Xs: dev}.Quantile(0.5)
	return center, math.Max(discordSpreads*1.4826*mad, minDiscord)
}

func (f *File) hasUnit(u string) bool {
	for _, runs := range f.Runs {
		for _, r := range runs {
			if _, ok := r.Values[u]; ok {
				return true
			}
		}
	}
	return false
}

// Discordant is the passes left out, numbered from 1 as make bench
// counts them.
func (f *File) Discordant() []int {
	var out []int
	for p, ps := range f.Passes {
		if ps.Discordant {
			out = append(out, p+1)
		}
	}
	return out
}

// PassSummary says in one line which passes disagree with the file and
// by how much, or that they agree and how closely; "" for a file whose
// passes are not judged.
func (f *File) PassSummary() string {
	out := f.Discordant()
	if len(f.Passes) == 0 {
		return ""
	}
	var in []float64
	for _, ps := range f.Passes {
		if !ps.Discordant && ps.Rows >= minPassRows {
			in = append(in, ps.Shift)
		}
	}
	if len(in) == 0 {
		return ""
	}
	lo, hi := slices.Min(in), slices.Max(in)
	if len(out) == 0 {
		return fmt.Sprintf("%d passes agree: their rows within %+.2f%% to %+.2f%% together", len(f.Passes), 100*lo, 100*hi)
	}
	var moved []string
	for _, p := range out {
		moved = append(moved, fmt.Sprintf("%d (%+.1f%%)", p, 100*f.Passes[p-1].Shift))
	}
	return fmt.Sprintf("%d of %d passes disagree with the others, their rows moving together beyond them (%+.2f%% to %+.2f%%): pass %s, left out",
		len(out), len(f.Passes), 100*lo, 100*hi, strings.Join(moved, ", "))
}

// DiscordantRuns counts the runs of name from passes that disagree with
// the file (Run.Discordant), and its runs.
func (f *File) DiscordantRuns(name string) (n, runs int) {
	return f.count(name, func(r Run) bool { return r.Discordant })
}
