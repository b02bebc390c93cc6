package measure

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestSizing(t *testing.T) {
	loop := sizing{Min: 100_000, Max: 1 << 26, CallTime: 4 * time.Millisecond}
	frames := sizing{Min: 16640, Max: 1 << 26, CallTime: 4 * time.Millisecond}
	for _, tc := range []struct {
		sz   sizing
		n    int
		ns   float64
		want uint32
	}{
		{loop, 1, 5, 100_000},       // never too short
		{loop, 1e9, 5, 800_000},     // fill the call time
		{loop, 500_000, 5, 500_000}, // no more than asked
		{sizing{Min: 100_000, Max: 1 << 26, CallTime: time.Second}, 1e12, 0, 1 << 26}, // capped
		{loop, 1e9, 1000, 100_000}, // slow programs
		{frames, 100, 40, 16640},   // -benchtime 100x: the minimum
		{frames, 1e9, 40, 100_000}, // 4 ms at 40 ns per frame
		{sizing{Min: 100_000, MinTime: 40 * time.Millisecond, Max: 1 << 26, CallTime: 4 * time.Millisecond}, 1e9, 3800, 10526}, // costly units: the floor stops at MinTime
		{sizing{Min: 100_000, MinTime: 40 * time.Millisecond, Max: 1 << 26, CallTime: 4 * time.Millisecond}, 1e9, 64, 100_000}, // cheap ones keep it
	} {
		if got := tc.sz.Size(tc.n, tc.ns); got != tc.want {
			t.Errorf("%+v.Size(%d, %v) = %d, want %d", tc.sz, tc.n, tc.ns, got, tc.want)
		}
	}
}

func TestOrderRotates(t *testing.T) {
	for k := 1; k <= 4; k++ {
		pos := make([][]int, k) // pos[stream][position] count
		for s := range pos {
			pos[s] = make([]int, k)
		}
		for i := range k {
			o := Order(i, k)
			if got := slices.Sorted(slices.Values(o)); !slices.Equal(got, Order(0, k)) {
				t.Fatalf("Order(%d, %d) = %v: not every stream once", i, k, o)
			}
			for p, s := range o {
				pos[s][p]++
			}
		}
		for s := range pos {
			for p, n := range pos[s] {
				if n != 1 {
					t.Errorf("k=%d: stream %d in position %d %d times over %d rounds, want once", k, s, p, n, k)
				}
			}
		}
	}
}

// TestRunPairs runs two synthetic streams whose cost differs by a
// constant while the "machine" changes speed between rounds: the paired
// difference recovers the constant, the relative one the constant over the
// baseline, and the rounds stop at a whole balanced block once the budget
// is spent.
func TestRunPairs(t *testing.T) {
	speed := []float64{1, 2, 1, 2, 2, 1}
	var calls int
	stream := func(cost, extra float64) Stream {
		return func(size uint32) (float64, error) {
			calls++ // both streams of a round see the same speed
			return cost*speed[((calls-1)/2)%len(speed)] + extra, nil
		}
	}
	sz := sizing{Warm: 10, Min: 100, Max: 100, CallTime: time.Millisecond}
	reset := 0
	r, err := run(Budget{Units: 600}, sz, func() { reset++ }, stream(5, 0.3), stream(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.Count() != 6 || reset != 1 || calls != 2+12 {
		t.Fatalf("rounds %d, resets %d, calls %d: want 6 rounds after one warm-up each", r.Count(), reset, calls)
	}
	if d := r.Paired(0, 1); math.Abs(d.Value-0.3) > 1e-9 || !d.Covers(0.3) {
		t.Errorf("paired difference %+v, want 0.3 exactly", d)
	}
	if loc := r.Location(1); loc.Value != 5 {
		t.Errorf("baseline location %+v, want the fast state's 5", loc)
	}
	calls = 0
	r, err = run(Budget{Time: time.Nanosecond}, sz, nil, stream(5, 0.3), stream(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if r.Count() != 4 {
		t.Errorf("a timed run of two streams stopped after %d rounds, want one block of 4 (ABBA)", r.Count())
	}
}

// TestRunTurns runs two streams whose first call after the other's costs a
// switch of 20 ms: each then makes several calls in a row per round,
// MaxTurn at most, so that switching does not take most of the time, and
// call i of one stream's turn pairs with call i of the other's.
func TestRunTurns(t *testing.T) {
	var seq []int
	stream := func(s int, cost float64) Stream {
		return func(size uint32) (float64, error) {
			if len(seq) > 0 && seq[len(seq)-1] != s {
				time.Sleep(20 * time.Millisecond)
			}
			seq = append(seq, s)
			return cost + float64(len(seq)%4), nil
		}
	}
	sz := sizing{Warm: 10, Min: 100, Max: 100, CallTime: 4 * time.Millisecond, MaxTurn: 4}
	r, err := run(Budget{Time: time.Nanosecond}, sz, nil, stream(0, 5.5), stream(1, 5))
	if err != nil {
		t.Fatal(err)
	}
	if r.Turn != 4 || r.Count() != 4*4 {
		t.Fatalf("turn %d, calls %d: want turns of 4 (the switch is 5 calls long) in one ABBA block", r.Turn, r.Count())
	}
	// The block's calls: turns of 4, the rounds in the order AB BA BA AB.
	a, b := slices.Repeat([]int{0}, 4), slices.Repeat([]int{1}, 4)
	want := slices.Concat(a, b, b, a, b, a, a, b)
	if got := seq[len(seq)-len(want):]; !slices.Equal(got, want) {
		t.Errorf("calls in the measured block %v, want %v", got, want)
	}
	sz.MaxTurn = 0
	if r, err = run(Budget{Time: time.Nanosecond}, sz, nil, stream(0, 5.5), stream(1, 5)); err != nil || r.Turn != 1 || r.Count() != 4 {
		t.Errorf("without MaxTurn: turn %d, calls %d, %v: want one call a turn, 4 rounds", r.Turn, r.Count(), err)
	}
}

// TestLayoutsSeeBothOrders: over 48 rounds of two streams, each layout
// (2, 3 or 8 of them, one per round in turn) has each stream first in
// half of its rounds; with 8, a multiple of the ABBA block, only because
// every other pass through the layouts is reversed.
func TestLayoutsSeeBothOrders(t *testing.T) {
	for _, layouts := range []int{2, 3, 8} {
		layout, round := -1, 0
		first := make([][2]int, layouts) // first[layout][stream]
		stream := func(s int) Stream {
			return func(size uint32) (float64, error) {
				if round >= 0 && layout >= 0 {
					first[layout][s]++
					round = -1 // counted this round's first
				}
				return 1, nil
			}
		}
		sz := sizing{Warm: 10, Min: 100, Max: 100, CallTime: time.Millisecond, Layouts: layouts,
			NewRound: func() { layout, round = (layout+1)%layouts, 0 }}
		r, err := run(Budget{Units: 4800}, sz, func() { layout = -1 }, stream(0), stream(1))
		if err != nil || r.Count() != 48 {
			t.Fatalf("%d layouts: %d rounds, %v: want 48", layouts, r.Count(), err)
		}
		for l, f := range first {
			if f[0] != f[1] {
				t.Errorf("%d layouts: layout %d had stream 0 first in %d rounds and stream 1 in %d, want as many", layouts, l, f[0], f[1])
			}
		}
	}
}

// TestOrderIsABBA: two streams alternate as A B, B A, B A, A B.
func TestOrderIsABBA(t *testing.T) {
	var got [][]int
	for i := range 4 {
		got = append(got, Order(i, 2))
	}
	want := [][]int{{0, 1}, {1, 0}, {1, 0}, {0, 1}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("Order over a block = %v, want %v", got, want)
		}
	}
}

// TestBudgetShared: rows picked out of a family by -test.bench take the
// time of the rows left out, so the family measures as long either way; a
// `-benchtime Nx` budget is a count, the same for every row.
func TestBudgetShared(t *testing.T) {
	sec := Budget{Time: time.Second, Resolution: 0.1, Max: 4 * time.Second}
	for _, tc := range []struct {
		b           Budget
		n, selected int
		want        Budget
	}{
		{sec, 14, 1, Budget{Time: 14 * time.Second, Resolution: 0.1, Max: 56 * time.Second}},
		{sec, 14, 7, Budget{Time: 2 * time.Second, Resolution: 0.1, Max: 8 * time.Second}},
		{sec, 14, 14, sec},
		{sec, 3, 2, Budget{Time: 1500 * time.Millisecond, Resolution: 0.1, Max: 6 * time.Second}},
		{Budget{Units: 100}, 14, 1, Budget{Units: 100}},
		{sec, 14, 0, sec},
	} {
		if got := tc.b.Shared(tc.n, tc.selected); got != tc.want {
			t.Errorf("%+v.Shared(%d, %d) = %+v, want %+v", tc.b, tc.n, tc.selected, got, tc.want)
		}
	}
}

// TestTimedEndsOnWholeLayouts: a timed row ends on a whole balanced block
// and a whole pass through its layouts, however soon its time is spent:
// with 3 layouts and ABBA blocks of 4 rounds, after 12 rounds, every
// layout measured as often as the others.
func TestTimedEndsOnWholeLayouts(t *testing.T) {
	stream := func(size uint32) (float64, error) { return 1, nil }
	for _, tc := range []struct{ layouts, rounds int }{{0, 4}, {1, 4}, {3, 12}, {8, 8}} {
		sz := sizing{Warm: 10, Min: 100, Max: 100, CallTime: time.Millisecond, Layouts: tc.layouts}
		r, err := run(Budget{Time: time.Nanosecond}, sz, nil, stream, stream)
		if err != nil || r.Count() != tc.rounds {
			t.Errorf("%d layouts: %d rounds, %v: want %d", tc.layouts, r.Count(), err, tc.rounds)
		}
	}
}

// TestRowLendsTime: a row lends its time to the rows measured
// (Budget.Shared) while it could run: left out by -test.bench with its
// Setup not run, it lends; once its Setup failed, or skipped, or a Start
// row, it does not, so a family of rows the host refuses does not stretch
// the few it can measure.
func TestRowLendsTime(t *testing.T) {
	refused := Row{Name: "refused", Setup: func() (Row, error) { return Row{}, errors.New("refused") }}
	set := Row{Name: "set", Setup: func() (Row, error) { return Row{}, nil }}
	for _, tc := range []struct {
		row  Row
		want bool
	}{
		{refused, true},
		{refused.setUp(), false},
		{set.setUp(), true},
		{Row{Name: "skipped", Skip: "no NIC named"}, false},
		{Row{Name: "start", Start: func(*testing.B) Job { return Job{} }}, false},
	} {
		if got := tc.row.runnable(); got != tc.want {
			t.Errorf("row %s (Err %v): runnable %v, want %v", tc.row.Name, tc.row.Err, got, tc.want)
		}
	}
}
