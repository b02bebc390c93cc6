package gauge

import (
	"math"
	"math/rand/v2"
	"sync"

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

// spreadIters is the length of the spread loop Read times: as many
// multiplications, by a multiplier that takes one a cycle, as the chain's
// 24000 cycles.
const spreadIters = chainCycles * chainIters / spreadCycles

// spreadCycles is the cycles of one mulSpread iteration on an unshared
// core: its four multiplications at one a cycle.
const spreadCycles = 4

// A Load is what a call's references read: each one's time over that of
// the chain of as many nominal cycles, constant on a core the thread has
// to itself and higher while a neighbour takes what that reference runs
// on. The clock rate cancels in each ratio. Three resources are shared,
// so there are three references (docs/method.md#contention):
// Load[Caches], a pointer chase over 64 KiB, slows when a neighbour on
// the host core fills its private caches; Load[Ports], a loop of
// independent multiplications and additions, when a sibling hyperthread
// takes the execution ports; Load[Memory], a pointer chase over 8 MiB,
// when a neighbour anywhere on the socket takes the shared cache and the
// memory's bandwidth. A BPF program's path feels all three; a chain of
// dependent multiplications feels none. A zero reading is none.
type Load [Refs]float64

// The references of a Load.
const (
	Caches = iota // the chase over 64 KiB
	Ports         // the spread loop
	Memory        // the chase over 8 MiB
	// Refs is how many references a Load has.
	Refs
)

// RefNames names each reference as a trace's column does
// (tools/contention).
var RefNames = [Refs]string{Caches: "chase64k", Ports: "spread", Memory: "chase8m"}

// Max is the larger reading of each reference in l and m.
func (l Load) Max(m Load) Load {
	for k := range l {
		l[k] = max(l[k], m[k])
	}
	return l
}

// A Reading is the state of the measuring core right after a call: its
// clock rate, and whether something else was taking its caches or its
// execution ports.
type Reading struct {
	// CycleNs is the length in ns of one cycle, timed on chains of
	// dependent multiplications (mulChain); 0 where the suite has no
	// such chain (architectures other than amd64) or the clock did not
	// advance.
	CycleNs float64
	// Load is the references' times over the chain's. Zero where
	// CycleNs is.
	Load Load
}

// Read times the chain over N and 2N iterations, the chase and the spread
// loop, on the thread's CPU clock, the best of three of each: the
// difference of the two chains cancels the clock reads' own cost, the
// best of three the interrupts that land in one.
func Read() Reading {
	if !haveChain {
		return Reading{}
	}
	var best [5]int64
	for j := range best {
		best[j] = math.MaxInt64
	}
	memory := memoryChase()
	for range 3 {
		for j := range 2 {
			t := sched.ThreadCPU()
			mulChain(chainIters << j)
			best[j] = min(best[j], sched.ThreadCPU()-t)
		}
		t := sched.ThreadCPU()
		cacheChase.run()
		best[2] = min(best[2], sched.ThreadCPU()-t)
		t = sched.ThreadCPU()
		mulSpread(spreadIters)
		best[3] = min(best[3], sched.ThreadCPU()-t)
		t = sched.ThreadCPU()
		memory.run()
		best[4] = min(best[4], sched.ThreadCPU()-t)
	}
	return reading(best)
}

// reading is the Reading of the best thread-clock times of chains of N
// and 2N iterations, of the chase, of the spread loop and of the memory
// chase. Each reference's ratio is over the shorter chain's cycles.
func reading(best [5]int64) Reading {
	chain := best[1] - best[0]
	if chain <= 0 {
		return Reading{}
	}
	g := Reading{CycleNs: float64(chain) / (chainCycles * chainIters)}
	for k, b := range [Refs]int64{Caches: best[2], Ports: best[3], Memory: best[4]} {
		if b > 0 {
			g.Load[k] = float64(b) / float64(chain)
		}
	}
	return g
}

// A chase is a random cyclic permutation of indexes: each step a
// load whose address is the last load's value, so that the chase takes
// the caches' latency for every step.
type chase struct {
	next  []uint32
	steps int // the steps of one timed chase
}

// chaseBytes is the chase's footprint: more than a level-1 data cache,
// well within a level-2 one, on the x86-64 cores of the last decade.
const chaseBytes = 64 << 10

// chaseSteps is the steps of one timed chase: tens of µs.
const chaseSteps = 4096

// memoryBytes is the memory chase's footprint: more than a level-2
// cache, so that every step goes to the cache the socket shares, or
// beyond it; memorySteps keeps one timed chase to tens of µs there.
const (
	memoryBytes = 8 << 20
	memorySteps = 1024
)

// cacheChase is Read's chase over 64 KiB, made once from a fixed seed.
var cacheChase = newChase(chaseBytes, 1)

// memoryChase is Read's memory chase, made on the first reading: a
// program that never reads the gauge does not hold its 8 MiB.
var memoryChase = sync.OnceValue(func() *chase {
	c := newChase(memoryBytes, 2)
	c.steps = memorySteps
	return c
})

// newChase is a chase over size bytes, its order drawn from seed, that
// takes chaseSteps steps a timing.
func newChase(size int, seed uint64) *chase {
	n := size / 4
	perm := rand.New(rand.NewPCG(seed, 0x63686173)).Perm(n)
	next := make([]uint32, n)
	for i := range n {
		next[perm[i]] = uint32(perm[(i+1)%n])
	}
	return &chase{next: next, steps: chaseSteps}
}

// run takes the chase's steps and returns where it ended (so that the
// steps are not optimised away).
func (c *chase) run() uint32 {
	var p uint32
	for range c.steps {
		p = c.next[p]
	}
	return p
}

// pow3 is 3^k mod 2^64, what mulChain(k/8) returns.
func pow3(k uint64) uint64 {
	p := uint64(1)
	for range k {
		p *= 3
	}
	return p
}
