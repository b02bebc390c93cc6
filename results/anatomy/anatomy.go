package anatomy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"bpfbench/results/stat"
)

// A Row is one row's anatomy: per repetition of its loop, what the
// variant's stream ran and, with a baseline, the baseline's.
type Row struct {
	Name   string
	Timing string // kernel (test_run's loop) or bpf_loop
	// V and Base are the medians per kind over the streams' calls;
	// HaveBase says the row had a baseline.
	V, Base  Counts
	HaveBase bool
	// Delta is V - Base, kind by kind.
	Delta Counts
	// CallsMinusRets is calls (direct and indirect) minus returns per
	// repetition, the median over the variant's calls, and its delta.
	CallsMinusRets, DeltaCallsMinusRets float64
	// Top are the functions the variant ran most instructions in, per
	// repetition, from the calls whose instruction count is the median's.
	Top []Fn
	// Pairs is how many calls of the variant the figures come from.
	Pairs int
	// BPFInstrs is the variant's instructions per repetition in JIT'd
	// BPF programs (bpf_prog_*), the median over its calls: a row whose
	// windows ran none measured no program.
	BPFInstrs float64
}

// An Fn is a function and the instructions per repetition run in it.
type Fn struct {
	Name   string
	Instrs float64
}

// pair is a long call's window less the short call's before it, per
// repetition.
type pair struct {
	counts Counts
	fns    map[string]float64
}

// Rows makes each row's anatomy from the raw windows, in the order the
// rows first appear. Windows outside a family's rows (a test's own
// calls) are left out.
func Rows(r *Raw) []Row {
	type key struct{ row, stream string }
	profiles := map[*Block]profile{}
	total := func(w *Window) (Counts, map[string]float64) {
		var c Counts
		fns := map[string]float64{}
		for _, bc := range w.Counts {
			p, ok := profiles[bc.Block]
			if !ok {
				p = profileOf(bc.Block)
				profiles[bc.Block] = p
			}
			n := float64(bc.N)
			for k := range c {
				c[k] += n * p.counts[k]
			}
			for _, f := range p.fns {
				fns[f.name] += n * f.n
			}
		}
		return c, fns
	}
	pairs := map[key][]pair{}
	timing := map[string]string{}
	var order []string
	last := map[key]*Window{}
	for i := range r.Windows {
		w := &r.Windows[i]
		if w.Row == "-" {
			continue
		}
		k := key{w.Row, w.Stream}
		if _, ok := timing[w.Row]; !ok {
			order = append(order, w.Row)
		}
		timing[w.Row] = w.Timing
		prev := last[k]
		last[k] = w
		if prev == nil || w.Repeat <= 2 || prev.Repeat != 2 || !w.Measured {
			continue
		}
		lc, lf := total(w)
		sc, sf := total(prev)
		reps := float64(w.Repeat - prev.Repeat)
		var p pair
		for j := range p.counts {
			p.counts[j] = (lc[j] - sc[j]) / reps
		}
		p.fns = map[string]float64{}
		for f, n := range lf {
			p.fns[f] = (n - sf[f]) / reps
		}
		for f, n := range sf {
			if _, ok := lf[f]; !ok {
				p.fns[f] = -n / reps
			}
		}
		pairs[k] = append(pairs[k], p)
	}
	var rows []Row
	for _, name := range order {
		v := pairs[key{name, "v"}]
		if len(v) == 0 {
			continue
		}
		row := Row{Name: name, Timing: timing[name], Pairs: len(v)}
		row.V, row.CallsMinusRets = medians(v)
		bpfs := make([]float64, len(v))
		for i, p := range v {
			for f, n := range p.fns {
				if strings.HasPrefix(f, "bpf_prog_") {
					bpfs[i] += n
				}
			}
		}
		row.BPFInstrs = stat.Median(bpfs)
		row.Top = top(v, row.V[Instrs])
		if b := pairs[key{name, "base"}]; len(b) > 0 {
			row.HaveBase = true
			var bcr float64
			row.Base, bcr = medians(b)
			for k := range row.Delta {
				row.Delta[k] = row.V[k] - row.Base[k]
			}
			row.DeltaCallsMinusRets = row.CallsMinusRets - bcr
		}
		rows = append(rows, row)
	}
	return rows
}

// medians is the median of each kind over ps, and of calls minus returns.
func medians(ps []pair) (Counts, float64) {
	var c Counts
	xs := make([]float64, len(ps))
	for k := range c {
		for i, p := range ps {
			xs[i] = p.counts[k]
		}
		c[k] = stat.Median(xs)
	}
	for i, p := range ps {
		xs[i] = p.counts[Calls] + p.counts[IndirectCalls] - p.counts[Rets]
	}
	return c, stat.Median(xs)
}

// topN is how many functions a row lists.
const topN = 8

// top lists the functions of the calls whose instruction count is within
// half an instruction per thousand repetitions of the median (those no
// interrupt or switch landed in), averaged over them.
func top(ps []pair, instrs float64) []Fn {
	sum := map[string]float64{}
	n := 0
	for _, p := range ps {
		if math.Abs(p.counts[Instrs]-instrs) > 0.0005*math.Max(1, instrs) {
			continue
		}
		n++
		for f, v := range p.fns {
			sum[f] += v
		}
	}
	if n == 0 {
		return nil
	}
	var fns []Fn
	for f, v := range sum {
		if v /= float64(n); v >= 0.05 {
			fns = append(fns, Fn{f, v})
		}
	}
	slices.SortFunc(fns, func(a, b Fn) int {
		if c := cmp.Compare(b.Instrs, a.Instrs); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(fns) > topN {
		fns = fns[:topN]
	}
	return fns
}

// wholeTolerance is how far from a whole number an event per repetition
// may lie on a row timed by the kernel's loop.
const wholeTolerance = 0.05

// Check says what is wrong with a row's figures: its windows must have
// run BPF code, and on a row timed by the kernel's test_run loop every
// event kind (all but Instrs) must come out within wholeTolerance of a
// whole number per repetition.
func (r Row) Check() []string {
	var bad []string
	// Every row runs a BPF program: test_run's, or the driver around a
	// bpf_loop.
	if r.BPFInstrs < 1 {
		bad = append(bad, fmt.Sprintf("%s: %.2f instructions per op in BPF programs: its windows ran no program", r.Name, r.BPFInstrs))
	}
	if r.Timing != "kernel" {
		return bad
	}
	check := func(what string, c Counts) {
		for k := Calls; k < nKinds; k++ {
			if d := math.Abs(c[k] - math.Round(c[k])); d > wholeTolerance {
				bad = append(bad, fmt.Sprintf("%s: %s %s is %.3f from a whole number", r.Name, what, k.Unit(), d))
			}
		}
	}
	check("variant", r.V)
	if r.HaveBase {
		check("baseline", r.Base)
	}
	return bad
}
