// Package stat estimates a quantity, with its confidence interval, from
// the runs of a benchmark: one sub-benchmark's runs (Summarize), or the
// difference of two sets of runs (Shift).
//
// It states the assumptions it makes as benchstat's benchmath does: with
// enough runs none (order statistics, the Mann-Whitney U test), because
// the runs of one machine are not normal; with fewer, that they are,
// and an Estimate carries that caveat for whoever prints it. It knows
// nothing of results files: it takes the values, the caller picks them.
package stat

import (
	"fmt"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// confidence is the level of every interval the report prints.
const confidence = 0.95

// An Estimate is a measured quantity with its confidence interval.
type Estimate struct {
	Center, Lo, Hi float64
	// Method says how Center and the interval were computed.
	Method string
	// Caveat is what a verdict drawn from the estimate must say with it:
	// that the interval comes from one run only, or assumes normal runs;
	// "" for the distribution-free intervals across runs.
	Caveat string
}

// The caveats of Estimate.
const (
	// CaveatOneRun: the interval is the suite's own over the paired
	// rounds of one run.
	CaveatOneRun = "one run: interval from that run only"
	// CaveatNoCI: one run that reported no interval of its own.
	CaveatNoCI = "one run without a per-run interval: run with -count 6 or more"
)

func caveatFew(n int) string {
	return fmt.Sprintf("%d runs: Student-t interval, assumes normal runs", n)
}

// Finite reports whether e has an interval: both bounds finite.
func (e Estimate) Finite() bool { return !math.IsInf(e.Lo, 0) && !math.IsInf(e.Hi, 0) }

// minRuns is the number of runs from which the distribution-free median
// interval benchstat uses exists at 95% (it needs 6).
const minRuns = 6

// MedianCI is xs' median and its 95% distribution-free interval from
// order statistics, as benchstat prints them (benchmath.AssumeNothing).
func MedianCI(xs []float64) (median, lo, hi float64) {
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(xs, &benchmath.DefaultThresholds), confidence)
	return s.Center, s.Lo, s.Hi
}

// Summarize estimates a quantity from its values in repeated runs (one per
// -count). With 6 or more runs: the median and its distribution-free
// interval from order statistics, exactly what benchstat prints (runs on
// this machine are not normal: it flips between two speeds). With 2-5:
// the mean and a Student-t interval. With one run: the suite's own
// interval over the paired rounds of that run (within, delta-ci95-ns),
// when it reported one; otherwise no interval at all.
func Summarize(xs, within []float64) Estimate {
	xs = slices.Clone(xs)
	switch n := len(xs); {
	case n >= minRuns:
		m, lo, hi := MedianCI(xs)
		return Estimate{m, lo, hi, fmt.Sprintf("median of %d runs; %.0f%% CI from order statistics across the runs, as benchstat", n, 100*confidence), ""}
	case n >= 2:
		m, lo, hi := stats.MeanCI(xs, confidence)
		if lo > hi || math.IsNaN(lo) { // all runs equal: no spread
			lo, hi = m, m
		}
		return Estimate{m, lo, hi, fmt.Sprintf("mean of %d runs; Student-t CI across the runs, fewer than %d runs: assumes normal", n, minRuns), caveatFew(n)}
	case n == 1 && len(within) == 1 && within[0] >= 0:
		return Estimate{xs[0], xs[0] - within[0], xs[0] + within[0], "one run: the suite's CI over the paired rounds of that run", CaveatOneRun}
	case n == 1:
		return Estimate{xs[0], math.Inf(-1), math.Inf(1), "one run and no CI", CaveatNoCI}
	}
	panic("Summarize: no values")
}

// Shift estimates a - b from two independent sets of runs (two variants
// measured in different sub-benchmarks, or the same one in two files).
// With 4 or more runs on each side: the Hodges-Lehmann estimate (the
// median of all pairwise differences) and the distribution-free interval
// obtained by inverting the Mann-Whitney U test, the test benchstat uses
// to say whether two samples differ. With fewer: Welch's t interval of
// the difference of means, or for one run on each side the suite's own
// intervals combined.
func Shift(a, b, wa, wb []float64) Estimate {
	na, nb := len(a), len(b)
	switch {
	case na >= 4 && nb >= 4 && na*nb <= maxPairs:
		d := make([]float64, 0, na*nb)
		for _, x := range a {
			for _, y := range b {
				d = append(d, x-y)
			}
		}
		slices.Sort(d)
		center := stats.Sample{Xs: d, Sorted: true}.Quantile(0.5)
		k, conf := uCritical(na, nb, 1-confidence)
		if k == 0 {
			return Estimate{center, math.Inf(-1), math.Inf(1), fmt.Sprintf("Hodges-Lehmann shift of %d vs %d runs: too few runs for a CI", na, nb), caveatFew(min(na, nb))}
		}
		return Estimate{center, d[k-1], d[len(d)-k], fmt.Sprintf("Hodges-Lehmann shift of %d vs %d runs; %.0f%% CI from the Mann-Whitney U test", na, nb, 100*conf), ""}
	case na >= 2 && nb >= 2:
		ma, mb := stats.Mean(a), stats.Mean(b)
		va, vb := stats.Variance(a)/float64(na), stats.Variance(b)/float64(nb)
		se := math.Sqrt(va + vb)
		df := (va + vb) * (va + vb) / (va*va/float64(na-1) + vb*vb/float64(nb-1))
		t := -stats.InvCDF(stats.TDist{V: df})((1 - confidence) / 2)
		if se == 0 || math.IsNaN(t) {
			t = 0
		}
		if na*nb > maxPairs {
			// Thousands of runs: the means are normal whatever the runs.
			return Estimate{ma - mb, ma - mb - t*se, ma - mb + t*se, fmt.Sprintf("difference of means of %d vs %d runs; Welch t CI (too many runs for the pairwise shift)", na, nb), ""}
		}
		return Estimate{ma - mb, ma - mb - t*se, ma - mb + t*se, fmt.Sprintf("difference of means of %d vs %d runs; Welch t CI, fewer than 4 runs a side: assumes normal", na, nb), caveatFew(min(na, nb))}
	case na == 1 && nb == 1 && len(wa) == 1 && len(wb) == 1 && wa[0] >= 0 && wb[0] >= 0:
		h := math.Hypot(wa[0], wb[0])
		return Estimate{a[0] - b[0], a[0] - b[0] - h, a[0] - b[0] + h, "one run a side: the suite's CIs over the paired rounds of each, combined", CaveatOneRun}
	}
	caveat := caveatFew(min(na, nb))
	if min(na, nb) == 1 {
		caveat = CaveatNoCI
	}
	return Estimate{stats.Mean(a) - stats.Mean(b), math.Inf(-1), math.Inf(1), fmt.Sprintf("%d vs %d runs: too few for a CI", na, nb), caveat}
}

// maxPairs bounds the pairwise differences Shift sorts (and the U
// distribution it tabulates): past it, Welch's interval, which thousands
// of runs make exact enough.
const maxPairs = 100_000

// uCritical returns k, the number of pairwise differences to cut from
// each end of their sorted list to get a two-sided interval for the shift
// at level 1-alpha (0 if no such interval exists), and that interval's
// actual level. k is the number of values u with P(U <= u) <= alpha/2
// under the null hypothesis, from the exact distribution of the
// Mann-Whitney U statistic for samples of sizes n and m.
func uCritical(n, m int, alpha float64) (k int, level float64) {
	counts := uCounts(n, m)
	var total float64
	for _, c := range counts {
		total += c
	}
	var cum float64
	for u, c := range counts {
		if (cum+c)/total > alpha/2 {
			return u, 1 - 2*cum/total
		}
		cum += c
	}
	return 0, 0
}

// uCounts returns, for u = 0..n*m, how many of the C(n+m, n) equally
// likely orderings of two samples give U = u: the coefficients of the
// Gaussian binomial coefficient [n+m choose n]_q, the product over
// i = 1..n of (1 - q^(m+i)) / (1 - q^i).
func uCounts(n, m int) []float64 {
	c := make([]float64, n*m+1)
	c[0] = 1
	deg := 0
	for i := 1; i <= n; i++ {
		// Multiply by (1 - q^(m+i)).
		for u := min(deg+m+i, len(c)-1); u >= m+i; u-- {
			c[u] -= c[u-m-i]
		}
		deg += m
		// Divide by (1 - q^i): r[u] = p[u] + r[u-i].
		for u := i; u <= deg; u++ {
			c[u] += c[u-i]
		}
		// The quotient has degree deg: clear what the product left above.
		clear(c[deg+1:])
	}
	return c
}

// Median is the median of vs.
func Median(vs []float64) float64 { return stats.Sample{Xs: vs}.Quantile(0.5) }
