package measure

import (
	"fmt"
	"math"
	"time"

	"github.com/aclements/go-moremath/stats"
)

// The rounds engine. Every family measures the same way: a few streams (a
// variant, its baseline, a reference) each take units of work (repetitions
// of a test_run loop, frames of the traffic rig) and return the cost per
// unit; the engine warms them up, sizes one call from the first stream's
// speed, and measures every stream once per round, in an order that
// changes every round, so that all of them see the machine in the same
// states. Differences are taken within a round (paired), where the
// machine's speed level cancels.

// A Stream measures size units of work and returns the cost of one unit in
// nanoseconds. Whatever else a stream learns (the kernel's own average, the
// frames counted) it keeps itself.
type Stream func(size uint32) (float64, error)

// Sizing picks how many units one call of a stream takes.
type Sizing struct {
	// Warm is the units of each stream's warm-up call, which also
	// estimates the first stream's speed.
	Warm uint32
	// Min and Max bound the units of one call: Min so that a call's
	// fixed cost stays small next to its loop, Max as the kernel or the
	// program allows.
	Min, Max uint32
	// CallTime is the target length of one call: long enough that the
	// fixed per-call cost is small next to it, short enough that the
	// machine's speed rarely changes inside one call.
	CallTime time.Duration
}

// Size is the units of one call: enough to fill CallTime at nsPerUnit, no
// more than n (the units the benchmark asked for, so that `-benchtime
// 100x` stays quick), and within [Min, Max].
func (s Sizing) Size(n int, nsPerUnit float64) uint32 {
	want := float64(s.CallTime.Nanoseconds()) / math.Max(nsPerUnit, 0.1)
	r := math.Min(math.Min(want, float64(n)), float64(s.Max))
	return uint32(math.Max(r, float64(s.Min)))
}

// Rounds are the samples of streams measured in alternating rounds.
type Rounds struct {
	// Size is the units of every measured call.
	Size uint32
	// Ns[s][i] is stream s's cost per unit in round i.
	Ns [][]float64
}

// Order is the order in which round i of k streams measures them: a
// rotation that advances every round, so that over k rounds every stream
// is measured once in each position.
func Order(i, k int) []int {
	o := make([]int, k)
	for j := range o {
		o[j] = (i + j) % k
	}
	return o
}

// Run measures streams in rounds until about n units of each are
// measured. reset, when set, runs once the warm-up is done (b.ResetTimer).
func Run(n int, sz Sizing, reset func(), streams ...Stream) (*Rounds, error) {
	if len(streams) == 0 {
		return nil, fmt.Errorf("measure: no streams")
	}
	// Warm up caches, the branch predictor and the dispatcher image, and
	// estimate the speed.
	var warm float64
	for s, f := range streams {
		ns, err := f(sz.Warm)
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		if s == 0 {
			warm = ns
		}
	}
	r := &Rounds{Size: sz.Size(n, warm), Ns: make([][]float64, len(streams))}
	rounds := max(1, (n+int(r.Size)-1)/int(r.Size))
	if reset != nil {
		reset()
	}
	for i := range rounds {
		for _, s := range Order(i, len(streams)) {
			ns, err := streams[s](r.Size)
			if err != nil {
				return nil, err
			}
			r.Ns[s] = append(r.Ns[s], ns)
		}
	}
	return r, nil
}

// Count is the number of rounds.
func (r *Rounds) Count() int { return len(r.Ns[0]) }

// Mean is stream s's mean cost per unit over the rounds.
func (r *Rounds) Mean(s int) float64 { return stats.Mean(r.Ns[s]) }

// Paired is the mean per-round difference a - b and the half-width of its
// 95% confidence interval (+Inf for a single round).
func (r *Rounds) Paired(a, b int) (delta, ci95 float64) {
	d := make([]float64, r.Count())
	for i := range d {
		d[i] = r.Ns[a][i] - r.Ns[b][i]
	}
	return meanCI95(d)
}

// meanCI95 returns the mean of xs and the half-width of its 95% confidence
// interval (Student's t; +Inf for fewer than two samples).
func meanCI95(xs []float64) (mean, half float64) {
	m, lo, hi := stats.MeanCI(xs, 0.95)
	return m, (hi - lo) / 2
}
