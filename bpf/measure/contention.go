package measure

// maxContended is the largest share of a row's calls that may be
// contended for its figures to come from the others: past it, the row
// never saw the core uncontended, says so (contended-frac), and reports
// all its calls.
const maxContended = 0.9

// Uncontended is r with only the rounds' calls whose every stream's load
// was at most threshold (call i of each stream, so pairs stay pairs), and
// the share of calls left out. ok is false, and r is returned whole, when
// more than maxContended of them were contended, or none was not, or r
// has no loads.
func (r *Rounds) Uncontended(threshold float64) (u *Rounds, contended float64, ok bool) {
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
			clean = clean && r.Load[s][i] <= threshold
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
		return r, contended, false
	}
	if len(keep) == n {
		return r, 0, true
	}
	u = &Rounds{Size: r.Size, Turn: r.Turn, Elapsed: r.Elapsed}
	pick := func(xs [][]float64) [][]float64 {
		out := make([][]float64, len(xs))
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
	u.Ns, u.CycleNs, u.Load = pick(r.Ns), pick(r.CycleNs), pick(r.Load)
	return u, contended, true
}
