// Command passstate looks for what puts a row's cycles/op at one of two
// levels from one pass of make bench to the next: it measures XDP drop
// (the XDP family's baseline, held in the dispatcher as the suite holds
// it) in pairs of states that a pass fixes once and the next may draw
// otherwise, the two arms of each pair in random order, round after
// round, and prints each pair's levels and their paired difference:
//
//   - half: the program's dispatcher image in the first or the second
//     half of the dispatcher's page (each dispatcher update writes the
//     other half; an update from an empty dispatcher writes the first);
//   - cpu: the measuring thread on one vCPU or the other;
//   - thread: the same measuring thread, or a fresh one each time;
//   - load: one load of the program, or a second one;
//   - with -fillers k, the half and the load again with k fillers in the
//     dispatcher above both loads, each arm from an empty one;
//   - with -loads n (and -fillers k), instead of the pairs, n loads of XDP
//     drop behind k fillers, each load's level in every round: whether a
//     load keeps its level from round to round (where its JIT image lies:
//     each load's line says where it starts in its 64-byte cache line)
//     or every round draws anew.
//
// As root, on a quiet machine:
//
//	go run ./tools/passstate [-rounds 16] [-calls 24] [-cpu 1] [-fillers 16] [-v]
//	go run ./tools/passstate -loads 8 -fillers 16 [-rounds 8]
//
// docs/method.md#vcpus says what it found.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"

	"github.com/aclements/go-moremath/stats"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

func main() {
	rounds := flag.Int("rounds", 16, "rounds: each measures both arms of every pair once")
	calls := flag.Int("calls", 24, "test_run calls per arm and round, their median cycles/op its level")
	callTime := flag.Duration("calltime", 4*time.Millisecond, "length of one test_run call")
	cpu := flag.Int("cpu", 1, "`CPU` of the measuring thread; the cpu pair's other arm takes the other")
	verbose := flag.Bool("v", false, "also print every arm's level in the order measured, a round a line")
	fillers := flag.Int("fillers", 0, "also the half pair with this many fillers in the dispatcher (native XDP on veth), each arm from an empty dispatcher")
	loads := flag.Int("loads", 0, "instead of the pairs, this many loads of drop behind -fillers fillers, each load's level in every round")
	flag.Parse()
	if err := run(*rounds, *calls, *callTime, *cpu, *fillers, *loads, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "passstate:", err)
		os.Exit(1)
	}
}

// A lab is the programs and the dispatcher holder the arms use.
type lab struct {
	ns     *host.Netns
	a, b   *bpf.XDPObjects // two loads of progs/xdp.c
	flip   *ebpf.Program
	frame  []byte
	link   link.Link
	calls  int
	repeat uint32
}

// An arm is one state of a pair: set puts it, and the lab's fields say
// where to measure.
type arm struct {
	name string
	set  func(l *lab) error
	prog func(l *lab) (*ebpf.Program, *ebpf.Variable)
	cpu  int
	// fresh measures on a new OS thread.
	fresh bool
}

func run(rounds, calls int, callTime time.Duration, cpu, fillers, nloads int, verbose bool) error {
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("need two CPUs, have %d", runtime.NumCPU())
	}
	l := &lab{calls: calls}
	l.a, l.b = new(bpf.XDPObjects), new(bpf.XDPObjects)
	for _, o := range []*bpf.XDPObjects{l.a, l.b} {
		if err := bpf.LoadXDPObjects(o, nil); err != nil {
			return fmt.Errorf("load XDP programs (as root): %w", err)
		}
		defer o.Close()
	}
	var err error
	if l.flip, err = bpf.ReturnProgram("bpfbench_flip", bpf.XDPPass); err != nil {
		return err
	}
	defer l.flip.Close()
	if l.frame, err = bpf.UDPFrame(64); err != nil {
		return err
	}
	if l.ns, err = host.CreateNetns(); err != nil {
		return err
	}
	defer l.ns.Close()
	defer l.detach()

	// The repeat count of one call, sized once from a warm-up.
	if err := l.hold(l.a.Drop); err != nil {
		return err
	}
	err = sched.Pinned(cpu, func() error {
		loop := &testrun.Loop{Prog: l.a.Drop, Data: l.frame, Runs: l.a.Runs}
		s, err := loop.Measure(100_000)
		if err != nil {
			return err
		}
		l.repeat = uint32(max(20_000, float64(callTime.Nanoseconds())/max(s.Ns, 0.1)))
		return nil
	})
	if err != nil {
		return err
	}

	if nloads > 0 {
		return l.perLoad(nloads, fillers, rounds, cpu)
	}
	other := (cpu + 1) % runtime.NumCPU()
	drop := func(o func(l *lab) *bpf.XDPObjects) func(l *lab) (*ebpf.Program, *ebpf.Variable) {
		return func(l *lab) (*ebpf.Program, *ebpf.Variable) { return o(l).Drop, o(l).Runs }
	}
	first := drop(func(l *lab) *bpf.XDPObjects { return l.a })
	second := drop(func(l *lab) *bpf.XDPObjects { return l.b })
	half := func(n int, prog func(l *lab) (*ebpf.Program, *ebpf.Variable)) func(l *lab) error {
		return func(l *lab) error {
			p, _ := prog(l)
			if n == 0 {
				return l.hold(p)
			}
			if err := l.hold(l.flip); err != nil {
				return err
			}
			return l.link.Update(p)
		}
	}
	pairs := [][2]arm{
		{{name: "half 0", set: half(0, first), prog: first, cpu: cpu}, {name: "half 1", set: half(1, first), prog: first, cpu: cpu}},
		{{name: fmt.Sprintf("cpu %d", cpu), set: half(0, first), prog: first, cpu: cpu}, {name: fmt.Sprintf("cpu %d", other), set: half(0, first), prog: first, cpu: other}},
		{{name: "same thread", set: half(0, first), prog: first, cpu: cpu}, {name: "fresh thread", set: half(0, first), prog: first, cpu: cpu, fresh: true}},
		{{name: "load 1", set: half(0, first), prog: first, cpu: cpu}, {name: "load 2", set: half(0, second), prog: second, cpu: cpu}},
	}
	if fillers > 0 {
		fl, err := rig.NewFiller(fillers, link.XDPDriverMode)
		if err != nil {
			return err
		}
		defer fl.Close()
		if _, err := fl.Above(l.a.Drop, l.b.Drop); err != nil {
			return err
		}
		// From an empty dispatcher the first update writes the first
		// half and each later one the other: after the fillers and the
		// program, update n writes half (n-1) mod 2.
		full := func(n int, prog func(l *lab) (*ebpf.Program, *ebpf.Variable)) func(l *lab) error {
			return func(l *lab) error {
				l.detach()
				if err := fl.Set(0); err != nil {
					return err
				}
				if err := fl.Set(fillers); err != nil {
					return err
				}
				return half((fillers+n)%2, prog)(l)
			}
		}
		name := func(s string) string { return fmt.Sprintf("k%d %s", fillers, s) }
		pairs = append(pairs,
			[2]arm{{name: name("half 0"), set: full(0, first), prog: first, cpu: cpu}, {name: name("half 1"), set: full(1, first), prog: first, cpu: cpu}},
			[2]arm{{name: name("load 1"), set: full(0, first), prog: first, cpu: cpu}, {name: name("load 2"), set: full(0, second), prog: second, cpu: cpu}})
	}
	levels := make([][2][]float64, len(pairs))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	// The same thread, kept locked, for every arm that is not fresh.
	same := make(chan func(), 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		runtime.LockOSThread()
		for {
			select {
			case f := <-same:
				f()
			case <-done:
				return
			}
		}
	}()
	for r := range rounds {
		line := fmt.Sprintf("round %2d:", r+1)
		for _, p := range rng.Perm(len(pairs)) {
			for _, a := range rng.Perm(2) {
				x, err := l.measure(pairs[p][a], same)
				if err != nil {
					return fmt.Errorf("%s: %w", pairs[p][a].name, err)
				}
				levels[p][a] = append(levels[p][a], x)
				line += fmt.Sprintf("  %s %.2f", pairs[p][a].name, x)
			}
		}
		if verbose {
			fmt.Println(line)
		}
	}
	fmt.Printf("XDP drop, 64 B, %d rounds of %d calls an arm, cycles/op (median per round; the rounds' median and range):\n", rounds, calls)
	for i, p := range pairs {
		var d []float64
		for j := range levels[i][0] {
			d = append(d, levels[i][1][j]/levels[i][0][j]-1)
		}
		fmt.Printf("  %-12s %6.2f [%6.2f, %6.2f]   %-12s %6.2f [%6.2f, %6.2f]   paired %+.2f%% (rounds %+.2f%% to %+.2f%%)\n",
			p[0].name, med(levels[i][0]), slices.Min(levels[i][0]), slices.Max(levels[i][0]),
			p[1].name, med(levels[i][1]), slices.Min(levels[i][1]), slices.Max(levels[i][1]),
			100*med(d), 100*slices.Min(d), 100*slices.Max(d))
	}
	return nil
}

func med(xs []float64) float64 { return stats.Sample{Xs: xs}.Quantile(0.5) }

// hold makes p the one program in the dispatcher, from an empty one: its
// image then lies in the first half of the dispatcher's page.
func (l *lab) hold(p *ebpf.Program) error {
	l.detach()
	return l.ns.Do(func() (err error) {
		l.link, err = link.AttachXDP(link.XDPOptions{Program: p, Interface: 1, Flags: link.XDPGenericMode})
		return err
	})
}

func (l *lab) detach() {
	if l.link != nil {
		l.link.Close()
		l.link = nil
	}
}

// measure puts a's state and returns the median cycles/op of l.calls
// calls of its program, on a's CPU and thread.
func (l *lab) measure(a arm, same chan func()) (float64, error) {
	if err := a.set(l); err != nil {
		return 0, err
	}
	p, runs := a.prog(l)
	loop := &testrun.Loop{Prog: p, Data: l.frame, Runs: runs}
	var cyc []float64
	var err error
	body := func() {
		err = sched.Pinned(a.cpu, func() error {
			for range l.calls {
				s, err := loop.Measure(l.repeat)
				if err != nil {
					return err
				}
				if g := gauge.Read(); g.CycleNs > 0 {
					cyc = append(cyc, s.Ns/g.CycleNs)
				}
			}
			return nil
		})
	}
	ran := make(chan struct{})
	if a.fresh {
		// A goroutine that locks its thread and ends locked takes the
		// thread with it: the next arm gets another.
		go func() {
			runtime.LockOSThread()
			body()
			close(ran)
		}()
	} else {
		same <- func() { body(); close(ran) }
	}
	<-ran
	if err != nil {
		return 0, err
	}
	if len(cyc) == 0 {
		return 0, fmt.Errorf("no call had a cycle length")
	}
	return med(cyc), nil
}

// perLoad measures n loads of drop behind k native fillers above them
// all, each held alone from an empty dispatcher, in random order round
// after round, and prints every load's level per round.
func (l *lab) perLoad(n, k, rounds, cpu int) error {
	var loads []*bpf.XDPObjects
	for range n {
		o := new(bpf.XDPObjects)
		if err := bpf.LoadXDPObjects(o, nil); err != nil {
			return err
		}
		defer o.Close()
		loads = append(loads, o)
	}
	fl, err := rig.NewFiller(k, link.XDPDriverMode)
	if err != nil {
		return err
	}
	defer fl.Close()
	var drops []*ebpf.Program
	for _, o := range loads {
		drops = append(drops, o.Drop)
	}
	if _, err := fl.Above(drops...); err != nil {
		return err
	}
	levels := make([][]float64, n)
	same := make(chan func(), 1)
	go func() {
		runtime.LockOSThread()
		for f := range same {
			f()
		}
	}()
	defer close(same)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for range rounds {
		for _, i := range rng.Perm(n) {
			o := loads[i]
			a := arm{set: func(l *lab) error {
				l.detach()
				if err := fl.Set(0); err != nil {
					return err
				}
				if err := fl.Set(k); err != nil {
					return err
				}
				return l.hold(o.Drop)
			}, prog: func(*lab) (*ebpf.Program, *ebpf.Variable) { return o.Drop, o.Runs }, cpu: cpu}
			x, err := l.measure(a, same)
			if err != nil {
				return err
			}
			levels[i] = append(levels[i], x)
		}
	}
	fmt.Printf("XDP drop behind %d fillers, %d loads, %d rounds of %d calls, cycles/op (median per round; a line a load):\n", k, n, rounds, l.calls)
	for i, xs := range levels {
		a, err := bpf.JitAddr(loads[i].Drop)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  load %d (line offset %#04x): median %6.2f, rounds", i+1, a%64, med(xs))
		for _, x := range xs {
			line += fmt.Sprintf(" %.2f", x)
		}
		fmt.Println(line)
	}
	return nil
}
