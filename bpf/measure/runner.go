package measure

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"bpfbench/bpf/measure/gauge"
)

// A Stream measures size units of work and returns the cost of one unit in
// nanoseconds. Whatever else a stream learns (the kernel's own average, the
// frames counted) it keeps itself.
type Stream func(size uint32) (float64, error)

// sizing picks how many units one call of a stream takes.
type sizing struct {
	// Warm is the units of each stream's warm-up call, which also
	// estimates the first stream's speed.
	Warm uint32
	// Min and Max bound the units of one call: Min so that a call's
	// fixed cost stays small next to its loop, Max as the kernel or the
	// program allows.
	Min, Max uint32
	// MinTime, when set, caps what Min may ask: no more units than fill
	// MinTime at the estimated speed, for costly units that Min would
	// otherwise stretch to many CallTimes.
	MinTime time.Duration
	// CallTime is the target length of one call: long enough that the
	// fixed per-call cost is small next to it, short enough that the
	// machine's speed rarely changes inside one call.
	CallTime time.Duration
	// Cycles times the clock rate after every call (CycleNs), for
	// Rounds.Cycles: for streams that report their cost in cycles.
	Cycles bool
	// MaxTurn, when more than 1, lets each stream make up to that many
	// calls in a row in every round (its turn), as many as it takes for
	// the time spent measuring to be at least the time spent switching
	// to the stream or to the round's layout (attaching a dispatcher's
	// fillers takes far longer than a call:
	// docs/method.md#turns-calls-in-a-row-per-round). The runner times
	// the switch in the warm-up. Call j of one stream's turn
	// pairs with call j of the others'.
	MaxTurn int
	// NewRound, when set, runs before each measured round: where test_run
	// loops move on to their next layout (testrun.Loop.NextLayout), so that the
	// calls of a turn share one.
	NewRound func()
	// Layout, when set, says which layout the round's calls measure:
	// each call's goes into Rounds.Layout.
	Layout func() int
	// Layouts is the rounds NewRound takes to come back to the first
	// layout. When it is a multiple of the balanced block, every other
	// pass through them runs each round's order backwards, so that each
	// layout is measured in every position: with blocks of four rounds
	// (ABBA) and eight layouts, layout j would otherwise always see the
	// order of round j mod 4, and whatever the first call after a
	// layout's switch pays would fall on the same stream of that layout
	// in every run.
	Layouts int
	// Contention, when set, collects the core's load after every call
	// (with Cycles), and decides which calls were contended.
	Contention *gauge.Contention
	// Gauge reads the core's state after a call (with Cycles): gauge.Read
	// when nil.
	Gauge func() gauge.Reading
}

// Size is the units of one call: enough to fill CallTime at nsPerUnit, no
// more than n (the units a `-benchtime Nx` run asked for, so that it stays
// quick), and within [Min, Max] (Min as MinTime caps it).
func (s sizing) Size(n int, nsPerUnit float64) uint32 {
	ns := math.Max(nsPerUnit, 0.1)
	want := float64(s.CallTime.Nanoseconds()) / ns
	r := math.Min(math.Min(want, float64(n)), float64(s.Max))
	least := float64(s.Min)
	if s.MinTime > 0 {
		least = math.Min(least, math.Max(float64(s.MinTime.Nanoseconds())/ns, 1))
	}
	return uint32(math.Max(r, least))
}

// Budget says how long a sub-benchmark measures.
type Budget struct {
	// Units, when set (`-benchtime Nx`), measures about that many units
	// of each stream: a smoke run, quick and without a time target.
	Units int
	// Time is the least time a sub-benchmark measures (-benchtime).
	Time time.Duration
	// Resolution, when set, goes on measuring past Time, up to Max,
	// until the first paired difference's 95% half-width is at most
	// Resolution ns.
	Resolution float64
	Max        time.Duration
}

// Shared is the budget of each of selected rows of a family of n: a time
// budget grows by n/selected, so that a family measures as long whatever
// -test.bench picks of it, and a row measured alone is at least as precise
// as among its family (docs/method.md#selected-rows). A `-benchtime Nx`
// budget stays as it is.
func (b Budget) Shared(n, selected int) Budget {
	if b.Units > 0 || selected <= 0 || n <= selected {
		return b
	}
	b.Time = b.Time * time.Duration(n) / time.Duration(selected)
	b.Max = b.Max * time.Duration(n) / time.Duration(selected)
	return b
}

// BenchTime is Go's -benchtime flag as a Budget: the suite measures each
// sub-benchmark once, for that long (or that many units), however Go would
// ramp b.N.
func BenchTime() Budget {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return Budget{Time: time.Second}
	}
	s := f.Value.String()
	if n, ok := strings.CutSuffix(s, "x"); ok {
		if units, err := strconv.Atoi(n); err == nil {
			return Budget{Units: max(units, 1)}
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		d = time.Second
	}
	return Budget{Time: d}
}

// Order is the order in which round i of k streams measures them. A
// block of 2k rounds is balanced: over the first k rounds each stream
// takes each position once (a rotation), and the next k rounds run the
// same rotations backwards, so for two streams the order is ABBA. Every
// stream then follows every other as often as it precedes it, and a drift
// within a block favours none.
func Order(i, k int) []int {
	o := make([]int, k)
	for j := range o {
		o[j] = (i + j) % k
	}
	if (i/k)%2 == 1 {
		for a, b := 0, k-1; a < b; a, b = a+1, b-1 {
			o[a], o[b] = o[b], o[a]
		}
	}
	return o
}

// run measures streams in rounds within budget, in one stretch. reset,
// when set, runs once the warm-up is done (b.ResetTimer).
func run(budget Budget, sz sizing, reset func(), streams ...Stream) (*Rounds, error) {
	x, err := newRunner(budget, sz, streams)
	if err != nil {
		return nil, err
	}
	if reset != nil {
		reset()
	}
	if err := x.finish(); err != nil {
		return nil, err
	}
	return x.r, nil
}

// finish measures rounds until the runner is done, in one stretch.
func (x *runner) finish() error {
	for !x.done() {
		if err := x.visit(); err != nil {
			return err
		}
	}
	return nil
}

// A runner measures one set of streams a round at a time: run takes its
// rounds in one stretch, Family takes the rounds of many runners in
// turn.
type runner struct {
	budget  Budget
	sz      sizing
	streams []Stream
	r       *Rounds
	// i is the next round, units the units measured so far.
	i, units int
	// block is the rounds of one balanced block (Order).
	block int
}

// newRunner warms the streams up (caches, the branch predictor, the
// dispatcher image), estimates the first one's speed, sizes its calls and
// times the switch between them.
func newRunner(budget Budget, sz sizing, streams []Stream) (*runner, error) {
	if len(streams) == 0 {
		return nil, fmt.Errorf("measure: no streams")
	}
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
	n := math.MaxInt32
	if budget.Units > 0 {
		n = budget.Units
	}
	k := len(streams)
	r := &Rounds{Size: sz.Size(n, warm), Turn: 1, Ns: make([][]float64, k), CycleNs: make([][]float64, k), Load: make([][]gauge.Load, k), Layout: make([][]int, k)}
	if sz.MaxTurn > 1 && budget.Units == 0 {
		sw, err := switchTime(sz, streams)
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		r.Turn = int(min(math.Ceil(float64(sw)/float64(sz.CallTime)), float64(sz.MaxTurn)))
		r.Turn = max(r.Turn, 1)
	}
	x := &runner{budget: budget, sz: sz, streams: streams, r: r, block: 2 * k}
	if k == 1 {
		x.block = 1
	}
	return x, nil
}

// round measures every stream once (Turn calls each), in round i's order.
func (x *runner) round() error {
	sz, r := x.sz, x.r
	if sz.NewRound != nil {
		sz.NewRound()
	}
	order := Order(x.i, len(x.streams))
	if sz.Layouts > 1 && sz.Layouts%x.block == 0 && (x.i/sz.Layouts)%2 == 1 {
		slices.Reverse(order)
	}
	for _, s := range order {
		for range r.Turn {
			ns, err := x.streams[s](r.Size)
			if err != nil {
				return err
			}
			r.Ns[s] = append(r.Ns[s], ns)
			if sz.Layout != nil {
				r.Layout[s] = append(r.Layout[s], sz.Layout())
			}
			if sz.Cycles {
				g := x.reading()
				r.CycleNs[s] = append(r.CycleNs[s], g.CycleNs)
				r.Load[s] = append(r.Load[s], sz.Contention.Observe(g.Load))
			}
		}
	}
	x.i++
	x.units += int(r.Size) * r.Turn
	return nil
}

func (x *runner) reading() gauge.Reading {
	if x.sz.Gauge != nil {
		return x.sz.Gauge()
	}
	return gauge.Read()
}

// visit measures one round and adds its time to the runner's.
func (x *runner) visit() error {
	start := time.Now()
	err := x.round()
	x.r.Elapsed += time.Since(start)
	return err
}

// done says whether the runner has measured its budget: the units of a
// `-benchtime Nx` run, at least one round; or whole balanced blocks and
// whole passes through the layouts for Budget.Time (a row whose switch is
// slow makes few rounds, and ended after half the layouts its figure
// would be of those: docs/method.md#layout-where-the-jit-put-the-code),
// and with a Resolution until the first paired difference is that fine
// or Max is spent. A contended core does not make it measure
// longer: a row's figures then come from fewer free calls, and its
// interval says so (docs/method.md#contention).
func (x *runner) done() bool {
	b, r := x.budget, x.r
	if x.i == 0 {
		return false
	}
	if b.Units > 0 {
		return x.units >= b.Units
	}
	if x.i%x.block != 0 || x.i%max(x.sz.Layouts, 1) != 0 {
		return false
	}
	if r.Elapsed < b.Time {
		return false
	}
	if b.Resolution <= 0 || len(x.streams) < 2 || r.Elapsed >= b.Max {
		return true
	}
	return r.Paired(0, 1).Half() <= b.Resolution
}

// switchTime is the longest time a switch to one of streams took in the
// warm-up: each stream's call of warm units right after the others' (the
// first stream's after a NewRound, as in a round), less its second call in
// a row, which switches nothing. The longest over up to switchProbes
// tries, while they take less than switchProbeTime (a switch can take one
// dispatcher update or two, see rig.Holder; filling the dispatcher takes
// long enough to be measured once).
func switchTime(sz sizing, streams []Stream) (time.Duration, error) {
	var sw time.Duration
	start := time.Now()
	for try := 0; try < switchProbes && (try == 0 || time.Since(start) < switchProbeTime); try++ {
		if sz.NewRound != nil {
			sz.NewRound()
		}
		for _, f := range streams {
			var took [2]time.Duration
			for j := range took {
				t := time.Now()
				if _, err := f(sz.Warm); err != nil {
					return 0, err
				}
				took[j] = time.Since(t)
			}
			sw = max(sw, took[0]-took[1])
		}
	}
	return sw, nil
}

const (
	switchProbes    = 3
	switchProbeTime = 100 * time.Millisecond
)

// lcm is the least common multiple of a and b (both > 0): the rounds two
// loops with a and b layouts take to come back to their first ones.
func lcm(a, b int) int {
	g, h := a, b
	for h != 0 {
		g, h = h, g%h
	}
	return a / g * b
}
