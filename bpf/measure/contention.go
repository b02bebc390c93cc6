package measure

import (
	"cmp"
	"math"
	"slices"

	"bpfbench/bpf/measure/gauge"
)

// maxContended is the largest share of a row's calls that may be
// contended for its figures to come from the others: past it, the row
// never saw the core uncontended, says so (contended-frac), and reports
// its least contended calls.
const maxContended = 0.9

// Uncontended is r with only the rounds' calls whose every stream's load
// was within threshold (gauge.Load.Within; call i of each stream, so
// pairs stay pairs), and the share of calls left out. ok is false when
// more than maxContended of them were contended, or none was not: r's
// calls are then the least contended 1 - maxContended of them (the least
// gauge.Load.Excess), which a neighbour slowed least. r is returned whole,
// and ok false, when it has no loads.
func (r *Rounds) Uncontended(threshold gauge.Load) (u *Rounds, contended float64, ok bool) {
	n := r.Count()
	for s := range r.Ns {
		if s >= len(r.Load) || len(r.Load[s]) != n {
			return r, 0, false
		}
	}
	keep := make([]int, 0, n)
	for i := range n {
		clean := true
		for s := range r.Ns {
			clean = clean && r.Load[s][i].Within(threshold)
		}
		if clean {
			keep = append(keep, i)
		}
	}
	if n == 0 {
		return r, 0, false
	}
	contended = 1 - float64(len(keep))/float64(n)
	if contended > maxContended || len(keep) == 0 {
		return r.leastContended(threshold), contended, false
	}
	if len(keep) == n {
		return r, 0, true
	}
	return r.only(keep), contended, true
}

// leastContended is r with only its least contended 1 - maxContended
// calls (at least one), ranked by the larger gauge.Load.Excess of the
// streams' calls i, in their order.
func (r *Rounds) leastContended(threshold gauge.Load) *Rounds {
	n := r.Count()
	excess := make([]float64, n)
	for i := range excess {
		for s := range r.Load {
			excess[i] = max(excess[i], r.Load[s][i].Excess(threshold))
		}
	}
	rank := make([]int, n)
	for i := range rank {
		rank[i] = i
	}
	slices.SortStableFunc(rank, func(a, b int) int { return cmp.Compare(excess[a], excess[b]) })
	keep := rank[:max(1, int(math.Round((1-maxContended)*float64(n))))]
	slices.Sort(keep)
	return r.only(keep)
}

// only is r with only the calls keep of each stream.
func (r *Rounds) only(keep []int) *Rounds {
	n := r.Count()
	u := &Rounds{Size: r.Size, Turn: r.Turn, Elapsed: r.Elapsed}
	u.Ns, u.CycleNs, u.Load = pick(r.Ns, keep, n), pick(r.CycleNs, keep, n), pick(r.Load, keep, n)
	return u
}

// pick is each stream's calls keep of xs (none of a stream that has not
// all n calls: cycle lengths where none were timed).
func pick[T any](xs [][]T, keep []int, n int) [][]T {
	out := make([][]T, len(xs))
	for s, x := range xs {
		if len(x) != n {
			continue
		}
		for _, i := range keep {
			out[s] = append(out[s], x[i])
		}
	}
	return out
}
