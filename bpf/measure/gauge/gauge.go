package gauge

import (
	"math"
	"math/rand/v2"

	"bpfbench/bpf/sched"
)

// The machine's clock rate, measured after every call.
//
// A VM's host changes its cores' frequency by itself, in discrete levels
// that last seconds, and every time the suite measures moves with them
// (docs/method.md#the-clock-rate-cyclesop). There is no PMU in such a
// guest to count cycles, so the suite times a chain of dependent register
// multiplications, three cycles each on every x86-64 core of the last
// fifteen years, on the measuring thread after every call of every
// stream, and reports each call's time in cycles of the rate it ran at
// (cycles/op). Not additions: some cores fold chains of ADDs of an
// immediate in their renamer.

// chainCycles is the cycles of one mulChain iteration: eight dependent
// multiplications of three cycles each.
const chainCycles = 24

// chainIters is the length of the shorter of the two timed chains:
// 24000 cycles, 6 µs at 4 GHz.
const chainIters = 1000

// spreadIters is the length of the spread loop SpreadLoad times: as many
// multiplications, by a multiplier that takes one a cycle, as the chain's
// 24000 cycles.
const spreadIters = chainCycles * chainIters / spreadCycles

// spreadCycles is the cycles of one mulSpread iteration on an unshared
// core: its four multiplications at one a cycle.
const spreadCycles = 4

// A Reading is the state of the measuring core right after a call: its
// clock rate, and whether something else was taking its caches.
type Reading struct {
	// CycleNs is the length in ns of one cycle, timed on chains of
	// dependent multiplications (mulChain); 0 where the suite has no
	// such chain (architectures other than amd64) or the clock did not
	// advance.
	CycleNs float64
	// Load is the time of a pointer chase over 64 KiB (chase) over that
	// of the chain of 24000 cycles: constant on a core the thread has to
	// itself, more while something else on the host core takes the
	// caches the chase and a BPF program's path run from, which a chain
	// of dependent multiplications hardly notices. The clock rate cancels
	// in the ratio. 0 where CycleNs is. See docs/method.md#contention.
	Load float64
}

// Read times the chain over N and 2N iterations, and the chase, on
// the thread's CPU clock, the best of three of each: the difference of
// the two chains cancels the clock reads' own cost, the best of three the
// interrupts that land in one.
func Read() Reading {
	if !haveChain {
		return Reading{}
	}
	best := [3]int64{math.MaxInt64, math.MaxInt64, math.MaxInt64}
	for range 3 {
		for j := range 2 {
			t := sched.ThreadCPU()
			mulChain(chainIters << j)
			best[j] = min(best[j], sched.ThreadCPU()-t)
		}
		t := sched.ThreadCPU()
		chase.run()
		best[2] = min(best[2], sched.ThreadCPU()-t)
	}
	return reading(best)
}

// reading is the Reading of the best thread-clock times of chains of N
// and 2N iterations and of the chase.
func reading(best [3]int64) Reading {
	chain := best[1] - best[0]
	if chain <= 0 {
		return Reading{}
	}
	g := Reading{CycleNs: float64(chain) / (chainCycles * chainIters)}
	if best[2] > 0 {
		g.Load = float64(best[2]) / float64(chain)
	}
	return g
}

// SpreadLoad is the time of a throughput-bound loop (mulSpread: four
// independent multiplications and fourteen independent additions an
// iteration) over that of the chain, for as many nominal cycles, on the
// time-stamp counter, the best of three: a reference the suite compared
// with the chase and does not use (tools/contention). 0 where there is
// no chain.
func SpreadLoad() float64 {
	if !haveChain {
		return 0
	}
	bc, bs := uint64(math.MaxUint64), uint64(math.MaxUint64)
	for range 3 {
		t := tsc()
		mulChain(chainIters)
		c := tsc()
		mulSpread(spreadIters)
		s := tsc()
		bc, bs = min(bc, c-t), min(bs, s-c)
	}
	if bc == 0 {
		return 0
	}
	return float64(bs) / float64(bc)
}

// A Chase is a random cyclic permutation of indexes: each step a
// load whose address is the last load's value, so that the chase takes
// the caches' latency for every step.
type Chase struct{ next []uint32 }

// chaseBytes is the chase's footprint: more than a level-1 data cache,
// well within a level-2 one, on the x86-64 cores of the last decade.
const chaseBytes = 64 << 10

// chaseSteps is the steps of one timed chase: tens of µs.
const chaseSteps = 4096

// chase is Read's chase, made once from a fixed seed.
var chase = NewChase(chaseBytes, 1)

// NewChase is a chase over size bytes, its order drawn from seed.
func NewChase(size int, seed uint64) *Chase {
	n := size / 4
	perm := rand.New(rand.NewPCG(seed, 0x63686173)).Perm(n)
	next := make([]uint32, n)
	for i := range n {
		next[perm[i]] = uint32(perm[(i+1)%n])
	}
	return &Chase{next}
}

// run takes chaseSteps steps and returns where it ended (so that the
// steps are not optimised away).
func (c *Chase) run() uint32 {
	var p uint32
	for range chaseSteps {
		p = c.next[p]
	}
	return p
}

// Time is the best of three thread-clock times of a chase, in ns.
func (c *Chase) Time() float64 {
	best := int64(math.MaxInt64)
	for range 3 {
		t := sched.ThreadCPU()
		c.run()
		best = min(best, sched.ThreadCPU()-t)
	}
	return float64(best)
}

// CycleNs is the length in ns of one cycle of the calling thread's CPU
// (Reading.CycleNs).
func CycleNs() float64 { return Read().CycleNs }

// pow3 is 3^k mod 2^64, what mulChain(k/8) returns.
func pow3(k uint64) uint64 {
	p := uint64(1)
	for range k {
		p *= 3
	}
	return p
}
