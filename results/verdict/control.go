package verdict

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"bpfbench/bpf/units"
	"bpfbench/results/benchfile"

	"github.com/aclements/go-moremath/stats"
)

// The A/A control rows: a family's baseline measured against itself
// (BenchmarkXDP/prog=aa, BenchmarkDispatcher/dispatcher=aa). In each run
// the interval of its delta should cover 0 with probability 0.95; a file
// whose control rows miss 0 too often has intervals too narrow for its
// machine, and no timing verdict may be drawn from it.

// controlMissAlpha is how unlikely the misses must be, for honest 95%
// intervals, before the control is said to fail.
const controlMissAlpha = 0.01

// isControl says whether a sub-benchmark is an A/A control row.
func isControl(n benchfile.Name) bool { return units.IsControl(n.String()) }

// control counts the A/A control runs of the file and those whose 95%
// interval (delta-ns/op ± delta-ci95-ns) misses 0.
func control(f *benchfile.File) (runs, misses int) {
	for _, name := range f.Names {
		for _, r := range f.Runs[name] {
			if !isControl(r.Name) {
				continue
			}
			d, ok1 := r.Values["delta-ns/op"]
			h, ok2 := r.Values["delta-ci95-ns"]
			if !ok1 || !ok2 {
				continue
			}
			runs++
			if math.Abs(d) > h {
				misses++
			}
		}
	}
	return runs, misses
}

// controlFails says why the file's intervals cannot be trusted, or "":
// its A/A runs missed 0 more often than honest 95% intervals would with
// probability controlMissAlpha, or a family's A/A deltas lean (controlLeans).
func controlFails(f *benchfile.File) string {
	runs, misses := control(f)
	if runs == 0 || binomialTail(runs, misses, 0.05) >= controlMissAlpha {
		return controlLeans(f)
	}
	return fmt.Sprintf("%s fails its A/A control: %d of %d runs of the baseline against itself have an interval that misses 0 (honest 95%% intervals do that this often with probability %.2g): its intervals are too narrow for its machine",
		f.Stem(), misses, runs, binomialTail(runs, misses, 0.05))
}

// leanMinRuns is the fewest A/A runs of a family that can show a lean.
const leanMinRuns = 10

// controlLeans says which family's A/A control deltas lean, or "": over the
// file's runs of a family's control rows, a t-test of their mean against
// 0 at controlMissAlpha. Each run's interval may still cover 0, but a
// control whose deltas sit on one side, run after run, says the family's
// deltas carry that bias (docs/method.md#the-estimators).
func controlLeans(f *benchfile.File) string {
	deltas := map[string][]float64{}
	for _, name := range f.Names {
		for _, r := range f.Runs[name] {
			if d, ok := r.Values["delta-ns/op"]; ok && isControl(r.Name) {
				deltas[r.Name.Family] = append(deltas[r.Name.Family], d)
			}
		}
	}
	for _, fam := range slices.Sorted(maps.Keys(deltas)) {
		d := deltas[fam]
		if len(d) < leanMinRuns {
			continue
		}
		t, err := stats.OneSampleTTest(stats.Sample{Xs: d}, 0, stats.LocationDiffers)
		if err != nil || t.P >= controlMissAlpha {
			continue
		}
		return fmt.Sprintf("%s fails its A/A control: %s's runs of the baseline against itself lean, mean %+.3f ns over %d runs (t-test p=%.2g): its deltas carry a bias of that size",
			f.Stem(), fam, stats.Mean(d), len(d), t.P)
	}
	return ""
}

// binomialTail is P(X >= k) for X ~ Binomial(n, p).
func binomialTail(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	var sum float64
	for i := k; i <= n; i++ {
		lc, _ := math.Lgamma(float64(n + 1))
		la, _ := math.Lgamma(float64(i + 1))
		lb, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lc - la - lb + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return math.Min(sum, 1)
}

// noTiming says why no timing verdict may be drawn from the file, or "":
// it comes from an emulated guest, counts instructions, or fails its A/A
// control.
func noTiming(f *benchfile.File) string {
	switch {
	case f.Icount():
		return f.Stem() + " holds instruction counts (virt: tcg-icount), not times: it can show a path getting longer or shorter, never what it costs"
	case f.Emulated():
		return f.Stem() + " comes from an emulated guest (virt: " + f.Label("virt") + "): its timings show that the code ran, they are not measurements"
	}
	return controlFails(f)
}
