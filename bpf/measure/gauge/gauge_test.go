package gauge

import (
	"math"
	"runtime"
	"testing"
)

// TestCycleNs: the multiplication chain's product and the spread loop's
// sum are what they ran (so the assembler loops ran every iteration); a
// gauge is a cycle length and a load of each reference, or nothing where the clock did not
// advance (a busy machine can do that to a 6 µs chain: no timing is
// asserted); elsewhere than amd64 there is none, and no cycles are
// reported.
func TestCycleNs(t *testing.T) {
	for _, n := range []uint64{0, 1, chainIters} {
		if got, want := mulChain(n), pow3(8*n); got != want {
			t.Fatalf("mulChain(%d) = %d, want 3^%d mod 2^64 = %d", n, got, 8*n, want)
		}
		if got, want := mulSpread(n), 4*pow3(n)+14*n; got != want {
			t.Fatalf("mulSpread(%d) = %d, want 4*3^%d + 14*%d mod 2^64 = %d", n, got, n, n, want)
		}
	}
	for range 10 {
		g := Read()
		if runtime.GOARCH != "amd64" {
			if g != (Reading{}) {
				t.Fatalf("Read() = %+v without the chains, want none", g)
			}
			return
		}
		for _, v := range append([]float64{g.CycleNs}, g.Load[:]...) {
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				t.Fatalf("Read() = %+v, want finite non-negative figures", g)
			}
		}
		if g.CycleNs == 0 && g.Load != (Load{}) {
			t.Fatalf("Read() = %+v: a load without a cycle length", g)
		}
	}
}

// TestReading: the cycle length is the chain's extra time per extra cycle,
// the load the chase's and the spread loop's times over the chain's, and
// a clock that did not advance gives nothing.
func TestReading(t *testing.T) {
	for _, tc := range []struct {
		best [5]int64
		want Reading
	}{
		{[5]int64{6000, 12000, 9000, 7200, 30000}, Reading{CycleNs: 0.25, Load: Load{1.5, 1.2, 5}}},
		{[5]int64{6000, 12000, 12000, 6000, 0}, Reading{CycleNs: 0.25, Load: Load{2, 1}}},
		{[5]int64{6000, 6000, 9000, 6000, 9000}, Reading{}},
		{[5]int64{6000, 12000, 0, 0, 0}, Reading{CycleNs: 0.25}},
	} {
		if got := reading(tc.best); got != tc.want {
			t.Errorf("reading(%v) = %+v, want %+v", tc.best, got, tc.want)
		}
	}
}

// TestChase: the chase visits every index of its buffer before it comes
// back (a cycle, not a short loop that would stay in the cache).
func TestChase(t *testing.T) {
	c := newChase(4096, 7)
	seen := map[uint32]bool{}
	p := uint32(0)
	for range len(c.next) {
		if seen[p] {
			t.Fatalf("index %d visited twice within %d steps", p, len(c.next))
		}
		seen[p] = true
		p = c.next[p]
	}
	if p != 0 || len(seen) != 1024 {
		t.Errorf("after %d steps at %d, %d indexes seen: want back at 0 with 1024", len(c.next), p, len(seen))
	}
}

// BenchmarkRead is what one reading costs the measuring thread after
// every call: the chains, the chase and the spread loop, three times each.
func BenchmarkRead(b *testing.B) {
	for b.Loop() {
		Read()
	}
}
