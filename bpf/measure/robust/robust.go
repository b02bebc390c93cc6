// Package robust summarises the calls of a stream measured in rounds:
// its cost as a low quantile, a paired difference as a median, each with
// a 95% interval that holds for rounds that depend on each other. A
// leaf of the measuring engine, which states why:
//
// A VM's speed flips between states that last far longer than a round
// (docs/method.md#the-estimators). Rounds are therefore neither
// independent nor identically distributed, and a mean over them is at
// the mercy of the slow state and of the pairs that straddle a change.
// So:
//
//   - a paired difference is the median of the per-round differences,
//     which the few straddling pairs do not move;
//   - its interval comes from a moving-block bootstrap: resampling runs of
//     consecutive rounds (block length about the square root of the
//     rounds) keeps the dependence between neighbours that resampling
//     single rounds would pretend away, so the interval is as wide as the
//     dependence makes it (Künsch 1989);
//   - a stream's own cost per unit is a low quantile of its rounds, the
//     standard answer for deterministic code under interference (Chen and
//     Revels, "Robust benchmarking in noisy environments", 2016): it sits in
//     the fast state whenever the run spent some of its time there, so two
//     runs of one machine and kernel agree although each spent a different
//     share of its time in the slow state.
package robust

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// LowQuantile is the quantile of a stream's rounds that its cost per unit
// reports (ns/op).
const LowQuantile = 0.1

// Estimate is a location with its 95% interval.
type Estimate struct{ Value, Lo, Hi float64 }

// Half is the interval's half-width (+Inf when there is no interval).
func (e Estimate) Half() float64 { return (e.Hi - e.Lo) / 2 }

// Covers says whether the interval contains x.
func (e Estimate) Covers(x float64) bool { return e.Lo <= x && x <= e.Hi }

// bootstraps is the number of bootstrap resamples of an interval.
const bootstraps = 2000

// Quantile is the q-quantile of xs (NaN for none).
func Quantile(xs []float64, q float64) float64 {
	return stats.Sample{Xs: xs}.Quantile(q)
}

// Median and Low summarise the calls of rounds in which each stream
// made turn calls in a row: their median, and their LowQuantile.
func Median(xs []float64, turn int) Estimate {
	return blockBootstrap(xs, turn, func(s []float64) float64 { return Quantile(s, 0.5) })
}

// Dense is the median of the densest part of xs: of the values in the
// narrowest window holding a DenseShare of them (the shortest half, or
// "shorth", of Rousseeuw and Leroy's robust regression, at a share below
// a half). Where the values gather around one level it is their median;
// where up to about half of them were slowed by a neighbour nothing
// flagged, and spread out above that level, it is still the level: the
// median would follow the slowed ones. See docs/method.md#dense.
func Dense(xs []float64, turn int) Estimate {
	return blockBootstrap(xs, turn, DenseMedian)
}

// DenseAcross is Dense of each group of xs (groups[i] is xs[i]'s), the
// mean over the groups: where each group sits at a level of its own (a
// load of a program, its JIT image placed elsewhere), the figure moves
// with the groups' shares instead of taking the level most of them
// share (docs/method.md#layout-where-the-jit-put-the-code). The interval
// resamples the values with their groups, in blocks of turn.
func DenseAcross(xs []float64, groups []int, turn int) Estimate {
	idx := make([]float64, len(xs))
	for i := range idx {
		idx[i] = float64(i)
	}
	return blockBootstrap(idx, turn, func(s []float64) float64 {
		by := map[int][]float64{}
		for _, i := range s {
			by[groups[int(i)]] = append(by[groups[int(i)]], xs[int(i)])
		}
		sum := 0.0
		for _, g := range by {
			sum += DenseMedian(g)
		}
		return sum / float64(len(by))
	})
}

// DenseShare is the share of a stream's calls whose narrowest window
// Dense takes the median of.
const DenseShare = 0.4

// DenseMedian is Dense's figure without its interval (NaN for none).
func DenseMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	h := max(int(math.Ceil(DenseShare*float64(len(s)))), 1)
	best := 0
	for i := 1; i+h <= len(s); i++ {
		if s[i+h-1]-s[i] < s[best+h-1]-s[best] {
			best = i
		}
	}
	return stats.Sample{Xs: s[best : best+h], Sorted: true}.Quantile(0.5)
}

// Low is the LowQuantile of xs (see Median).
func Low(xs []float64, turn int) Estimate {
	return blockBootstrap(xs, turn, func(s []float64) float64 { return Quantile(s, LowQuantile) })
}

// blockBootstrap is stat of xs with the 95% percentile interval of stat
// over moving-block bootstrap resamples of xs, in blocks of at least turn
// values (the calls of one turn share a switch). Fewer than 4 values give
// no interval (±Inf). The resampling is seeded: the same rounds give the
// same interval.
func blockBootstrap(xs []float64, turn int, stat func([]float64) float64) Estimate {
	n := len(xs)
	e := Estimate{Value: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1)}
	if n == 0 {
		return e
	}
	e.Value = stat(xs)
	if n < 4 {
		return e
	}
	l := min(max(blockLength(n), turn), max(n/2, 1))
	rng := rand.New(rand.NewPCG(uint64(n), 0x62706662656e6368))
	res := make([]float64, n)
	vals := make([]float64, bootstraps)
	for k := range vals {
		for i := 0; i < n; i += l {
			start := rng.IntN(n - l + 1)
			copy(res[i:min(i+l, n)], xs[start:start+l])
		}
		vals[k] = stat(res)
	}
	slices.Sort(vals)
	s := stats.Sample{Xs: vals, Sorted: true}
	e.Lo, e.Hi = s.Quantile(0.025), s.Quantile(0.975)
	// A percentile interval of a median can miss the point estimate
	// when blocks are few; it always contains it.
	e.Lo, e.Hi = math.Min(e.Lo, e.Value), math.Max(e.Hi, e.Value)
	return e
}

// blockLength is the bootstrap's block length for n rounds: about sqrt(n),
// at least 1 and at most n/2.
func blockLength(n int) int {
	return max(1, min(int(math.Ceil(math.Sqrt(float64(n)))), n/2))
}

// RecentKeep is how many values a Recent keeps.
const RecentKeep = 31

// A Recent keeps the last RecentKeep values added and gives their median
// (of an even number, the upper middle): the fixed cost of a call, from
// the short calls measured beside the long ones (testrun.Loop,
// rig.Traffic), which work that happens to land in one short call
// (softirq after an attach or detach) does not move.
type Recent struct{ vals []float64 }

// Add adds v and returns the median of the values kept.
func (r *Recent) Add(v float64) float64 {
	if len(r.vals) == RecentKeep {
		copy(r.vals, r.vals[1:])
		r.vals = r.vals[:RecentKeep-1]
	}
	r.vals = append(r.vals, v)
	sorted := slices.Clone(r.vals)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// Len is how many values r keeps now.
func (r *Recent) Len() int { return len(r.vals) }
