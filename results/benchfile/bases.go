package benchfile

import (
	"fmt"
	"math"
	"strings"

	"github.com/aclements/go-moremath/stats"
)

// A paired row is measured in the same rounds as its base, so its line
// holds the base's level too: ns/op less delta-ns/op. Where a family's
// rows share one base program, that level is one figure measured many
// times over the file, and a run whose base ran far slower than the
// family's base runs did ran beside a neighbour the contention judge could
// not see, whether or not the whole pass moved: every reader leaves it
// out. docs/method.md#a-base-that-ran-slow is the rationale.

const (
	// slowBase is how far above the family's base level a run's base
	// must lie to be left out: far outside a clean file's spread of
	// bases, well inside what an unseen neighbour does to them
	// (docs/method.md#a-base-that-ran-slow).
	slowBase = 0.25
	// sharedBase is how close every paired row's median base must lie to
	// the family's for the rows to share one base.
	sharedBase = 0.15
	// minBaseRows is the fewest paired rows a family's base level is
	// taken over.
	minBaseRows = 5
)

// baseNs is the level of r's paired base in ns, and whether r has one.
func (r Run) baseNs() (float64, bool) {
	ns, ok1 := r.Values["ns/op"]
	d, ok2 := r.Values["delta-ns/op"]
	if !ok1 || !ok2 || ns-d <= 0 {
		return 0, false
	}
	return ns - d, true
}

// judgeBases marks, family by family, the runs whose paired base ran
// more than slowBase above the family's base level: the median of its
// paired runs' bases, where every paired row's median base lies within
// sharedBase of it. Emulated and counted files are not judged, as
// judgePasses does not judge them.
func (f *File) judgeBases() {
	if f.Icount() || f.Emulated() {
		return
	}
	families := map[string][]string{}
	for _, name := range f.Names {
		fam := f.Runs[name][0].Name.Family
		families[fam] = append(families[fam], name)
	}
	for _, names := range families {
		var all, rows []float64
		for _, name := range names {
			var xs []float64
			for _, r := range f.Runs[name] {
				if b, ok := r.baseNs(); ok && !r.Contended() && !r.Discordant {
					xs = append(xs, b)
				}
			}
			if len(xs) > 0 {
				all = append(all, xs...)
				rows = append(rows, stats.Sample{Xs: xs}.Quantile(0.5))
			}
		}
		if len(rows) < minBaseRows {
			continue
		}
		level := stats.Sample{Xs: all}.Quantile(0.5)
		shared := true
		for _, m := range rows {
			shared = shared && math.Abs(m/level-1) <= sharedBase
		}
		if !shared {
			continue
		}
		for _, name := range names {
			runs := f.Runs[name]
			for i := range runs {
				if b, ok := runs[i].baseNs(); ok && b > level*(1+slowBase) {
					runs[i].SlowBase = true
				}
			}
		}
	}
}

// slowOnly says the run is left out for its base alone: not contended,
// not of a pass that disagreed.
func (r Run) slowOnly() bool { return r.SlowBase && !r.Contended() && !r.Discordant }

// SlowBaseRuns counts the runs of f left out for their base alone
// (Run.SlowBase), and all its runs.
func (f *File) SlowBaseRuns() (n, all int) {
	for _, name := range f.Names {
		k, runs := f.SlowBase(name)
		n, all = n+k, all+runs
	}
	return n, all
}

// SlowBase counts the runs of name left out for their base alone
// (Run.SlowBase), and its runs.
func (f *File) SlowBase(name string) (n, runs int) { return f.count(name, Run.slowOnly) }

// SlowBaseSummary says in one line how many runs were left out because
// their base ran slow, and of which rows; "" when none were.
func (f *File) SlowBaseSummary() string {
	n, all := f.SlowBaseRuns()
	if n == 0 {
		return ""
	}
	var rows []string
	for _, name := range f.Names {
		for _, r := range f.Runs[name] {
			if r.slowOnly() {
				rows = append(rows, fmt.Sprintf("%s (pass %d)", r.Name.Short(), r.Pass+1))
				break
			}
		}
	}
	if len(rows) > 3 {
		rows = append(rows[:3], "...")
	}
	return fmt.Sprintf("%d of %d row-runs ran with their paired base over %.0f%% above the family's, a neighbour nobody flagged: left out (%s)",
		n, all, 100*slowBase, strings.Join(rows, ", "))
}
