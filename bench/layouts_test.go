package bench

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

// layoutPool is how many loads a family makes for each layout it keeps:
// the layouts are picked from the pool, spread over where the JIT put
// the measured program in a cache line (spread).
const layoutPool = 8

// lineBytes is the cache line size of the x86 CPUs the suite has run on.
const lineBytes = 64

// loadLayouts loads a family's programs layoutPool times n times (once
// for n = 1) and returns, for each of progs, the n loads that spread the
// program it names over the cache line (spread). Every load stays until tb
// ends: closed, the loads not picked would leave holes below the picked
// ones, where the dispatcher's fillers, loaded next, would land
// (rig.Filler.Above).
func loadLayouts[T interface{ Close() error }](tb testing.TB, n int, load func() (T, error), progs ...func(T) *ebpf.Program) [][]T {
	tb.Helper()
	size := n * layoutPool
	if n == 1 {
		size = 1
	}
	var pool []T
	tb.Cleanup(func() {
		for _, t := range pool {
			t.Close()
		}
	})
	for range size {
		t, err := load()
		record.Require(tb, err, "load programs")
		pool = append(pool, t)
	}
	var out [][]T
	for _, prog := range progs {
		out = append(out, pickLayouts(tb, pool, n, prog))
	}
	return out
}

// pickLayouts is the n loads of pool that spread prog over the cache
// line, or the first n where there is no choice or the kernel does not
// show where the JIT put prog (kptr_restrict=2, or no JIT): then drawn,
// as the log says.
func pickLayouts[T any](tb testing.TB, pool []T, n int, prog func(T) *ebpf.Program) []T {
	if len(pool) == n {
		return pool
	}
	offs := make([]int, len(pool))
	for i, t := range pool {
		a, err := bpf.JitAddr(prog(t))
		if err != nil {
			tb.Logf("layouts: %v: the first %d loads, drawn, not spread over the cache line", err, n)
			return pool[:n]
		}
		offs[i] = int(a % lineBytes)
	}
	var ls []T
	for _, i := range spread(offs, n) {
		ls = append(ls, pool[i])
	}
	return ls
}

// spread picks n of the loads whose programs start at offsets offs in
// their cache lines: sorted by offset, the middle of each of n equal
// parts, in random order (so that the order the rounds take them in is
// not the offsets'). A load's cost depends on that offset (an image that
// fits in one line runs a cycle faster than one that crosses it), so n
// loads drawn at random put a share of fast ones in each pass that moves
// its figure by a percent; picked so, every pass has about the pool's
// share (docs/method.md#layout-where-the-jit-put-the-code).
func spread(offs []int, n int) []int {
	idx := make([]int, len(offs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(offs[a], offs[b]) })
	picks := make([]int, n)
	for i := range picks {
		picks[i] = idx[(2*i+1)*len(idx)/(2*n)]
	}
	rand.Shuffle(n, func(i, j int) { picks[i], picks[j] = picks[j], picks[i] })
	return picks
}

// TestSpread: the picks are distinct loads at the pool's share of each
// offset, whatever order the pool came in.
func TestSpread(t *testing.T) {
	offs := make([]int, 64)
	for i := range offs {
		offs[i] = 40 - 32*(i%4/3) // one load in four at 8, the rest at 40
	}
	rand.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
	for range 20 {
		picks := spread(offs, 16)
		at8, seen := 0, map[int]bool{}
		for _, i := range picks {
			if seen[i] {
				t.Fatalf("load %d picked twice: %v", i, picks)
			}
			seen[i] = true
			if offs[i] == 8 {
				at8++
			}
		}
		if len(picks) != 16 || at8 != 4 {
			t.Fatalf("%d picks, %d of them at offset 8; want 16 and 4 (the pool's share)", len(picks), at8)
		}
	}
	if got := spread([]int{12}, 1); !slices.Equal(got, []int{0}) {
		t.Errorf("one layout of a pool of one: %v", got)
	}
}

// TestLoadLayouts: each program gets n distinct loads of the pool, and
// every load of the pool is closed when the test that made it ends. It
// follows the pool's own programs by their IDs, not the kernel's count of
// XDP programs, which other packages' tests change meanwhile.
func TestLoadLayouts(t *testing.T) {
	host.RequireRoot(t)
	const n = 4
	var ids []ebpf.ProgramID
	t.Run("load", func(t *testing.T) {
		progs := []*bpf.XDPProgram{bpf.XDPProgs.Drop, bpf.XDPProgs.Parse}
		loads := loadLayouts(t, n, func() (*bpf.XDPObjects, error) {
			o := new(bpf.XDPObjects)
			if err := bpf.LoadXDPObjects(o, nil); err != nil {
				return o, err
			}
			for _, p := range xdpPrograms {
				info, err := p.Of(o).Info()
				if err != nil {
					t.Fatal(err)
				}
				id, ok := info.ID()
				if !ok {
					t.Skip("this kernel does not say a program's ID")
				}
				ids = append(ids, id)
			}
			return o, nil
		}, progs[0].Of, progs[1].Of)
		for i, ls := range loads {
			distinct := map[*bpf.XDPObjects]bool{}
			for _, o := range ls {
				distinct[o] = true
			}
			if len(ls) != n || len(distinct) != n {
				t.Errorf("%s: %d layouts, %d distinct; want %d", progs[i], len(ls), len(distinct), n)
			}
		}
		if got, want := len(ids), n*layoutPool*len(xdpPrograms); got != want {
			t.Errorf("%d programs loaded for a pool of %d loads of %d: want %d", got, n*layoutPool, len(xdpPrograms), want)
		}
	})
	open := 0
	for _, id := range ids {
		p, err := ebpf.NewProgramFromID(id)
		switch {
		case err == nil:
			open++
			p.Close()
		case !errors.Is(err, os.ErrNotExist):
			t.Fatalf("program %d: %v", id, err)
		}
	}
	if open > 0 {
		t.Errorf("%d of the pool's %d programs still loaded after the test", open, len(ids))
	}
}

// TestLayoutsHidden: where the kernel hides where the JIT put a program
// (kptr_restrict=2 hides it from root too), the layouts are the pool's
// first loads, and the sysctl is restored.
func TestLayoutsHidden(t *testing.T) {
	pool := []*bpf.XDPObjects{testutil.LoadXDP(t), testutil.LoadXDP(t), testutil.LoadXDP(t), testutil.LoadXDP(t)}
	journal.SetSysctl(t, "kernel.kptr_restrict", "2")
	if _, err := bpf.JitAddr(pool[0].Drop); err == nil {
		t.Skip("kptr_restrict=2 still shows JIT addresses to this process")
	}
	if got := pickLayouts(t, pool, 2, bpf.XDPProgs.Drop.Of); !slices.Equal(got, pool[:2]) {
		t.Errorf("with JIT addresses hidden, the layouts are not the pool's first 2 loads")
	}
}
