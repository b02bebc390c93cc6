package testrun

import (
	"errors"
	"fmt"
	"time"

	"bpfbench/bpf/measure/mark"
	"bpfbench/bpf/measure/robust"
	"bpfbench/bpf/sched"

	"github.com/cilium/ebpf"
)

// ShortRepeat is the repeat count of the call that measures a test_run
// call's fixed cost. XDP takes its dispatcher path only for repeat > 1
// (net/bpf/test_run.c), so the short call must be 2, not 1, to pay the same
// fixed costs as the long call.
const ShortRepeat = 2

// maxRestarts bounds how often one measurement is retried after the kernel
// abandoned a loop because a signal was pending (EINTR).
const maxRestarts = 5

// maxRejected bounds how often one measurement is taken again because the
// suite's clock and the kernel's disagreed. Deferred kernel work after a
// burst of attachments can take tens of milliseconds to drain.
const maxRejected = 10

// Loop is one BPF_PROG_TEST_RUN repeat loop: a program, its input, and the
// counter that proves how often it ran.
type Loop struct {
	Prog *ebpf.Program
	Data []byte
	// Runs is the program's global run counter (see progs/include/common.h).
	Runs *ebpf.Variable
	// Prepare, when set, runs before each measurement on the measuring
	// thread, outside the timed region: cheap state a call needs (the
	// trampoline rows attach their kernel hook with it).
	Prepare func() error
	// Switch, when set, runs before Prepare on a thread bound to another
	// CPU: for changes of global state that leave the kernel deferred work
	// (attaching and detaching many XDP programs), which must not run on
	// the measuring CPU.
	Switch func() error
	// KernelClock reports the kernel's truncated average as the time per
	// repetition, for loops whose fixed per-call cost varies too much to be
	// subtracted (an XDP program outside the dispatcher: each call rebuilds
	// the dispatcher, docs/method.md#how-a-number-is-made). The kernel's
	// timer leaves that cost out; our clock cannot.
	KernelClock bool
	// Iterations, when set, is a global of the program that says how many
	// times one run repeats the measured work: a driver calling a kernel
	// function in a bpf_loop. Program types whose test_run runs the
	// program once per call (raw_tp, syscall) need it. Measure then sets
	// it to the repetitions and runs test_run once (repeat 0); Runs must
	// count iterations, and the time per repetition is per iteration. The
	// kernel does not time such calls: KernelNs stays 0.
	Iterations *ebpf.Variable
	// Counters are further run counters Measure checks, such as those of
	// programs attached to what the loop runs.
	Counters []Counter
	// Layouts are the same loop elsewhere in memory: other loads of the
	// same programs, each with its own counters and state changes.
	// Measure measures the current one, the loop itself first, and
	// NextLayout moves on to the next, which the rounds engine does once
	// a round, so that a figure is the code's and not that of where one
	// load put it: where the JIT places an image moves its cost by a few
	// percent, a different amount on every load (docs/method.md,
	// "Layout"). Two loops measured in rounds with as many layouts use
	// the same load in the same round. A layout's own Layouts are not
	// used.
	Layouts []*Loop
	layout  int
	// Emulated keeps samples whose clocks disagree at once: on an
	// emulated CPU they never agree for long. Family sets it
	// from BenchOptions.Emulated.
	Emulated bool
	// Anatomy, when set, logs each call's window for the anatomy; the
	// engine sets it from BenchOptions.Anatomy.
	Anatomy *mark.Log

	// recent holds the latest short-call times: their median is the fixed
	// cost subtracted from a long call.
	recent robust.Recent
}

// fixedCost records a short call's time and returns the median of the
// recent ones (robust.Recent). The median, not this call's time: softirq
// work that happens to land in one short call (as it does after native
// XDP is attached or detached on veth) would otherwise be subtracted from
// the long call and make the loop look faster than it is.
func (l *Loop) fixedCost(short int64) int64 { return int64(l.recent.Add(float64(short))) }

// Counter is a run counter that must advance by PerRepeat for every
// repetition and by PerCall for every test_run call of a measurement.
type Counter struct {
	Name               string
	Var                *ebpf.Variable
	PerRepeat, PerCall uint64
}

// MaxIterations is the most iterations one bpf_loop runs (BPF_MAX_LOOPS).
const MaxIterations = 1 << 23

// Sizes are what a loop's calls are made of: repetitions to warm up,
// the fewest and the most a call makes, and the most calls it makes in a
// row in a round (a turn).
type Sizes struct {
	Warm, Min, Max uint32
	MaxTurn        int
}

// Sizes are l's call sizes: at least 100,000 repetitions a call, so that
// the short call's fixed cost never dominates (an instruction-counting
// guest stops the floor earlier: measure.BenchOptions), at most what
// bpf_loop allows where the program repeats itself (Iterations); turns
// of up to 16 calls, enough for a Switch that fills a dispatcher
// (docs/method.md#turns-calls-in-a-row-per-round).
func (l *Loop) Sizes() Sizes {
	s := Sizes{Warm: 10000, Min: 100_000, Max: 1 << 26, MaxTurn: 16}
	if l.Iterations != nil {
		s.Max = MaxIterations
	}
	return s
}

// Sample is one measurement of a Loop.
type Sample struct {
	Repeat uint32
	// Ns is the time per repetition in nanoseconds, with sub-nanosecond
	// resolution: the thread CPU time of a long call minus that of a short
	// call (the median of the loop's recent short calls), divided by the
	// difference in repetitions. The fixed cost of a
	// call (syscall entry, copying the packet in, the dispatcher update
	// test_run does for XDP) cancels out.
	Ns float64
	// KernelNs is the kernel's own average for the long call. The kernel
	// truncates it to whole nanoseconds (do_div in bpf_test_timer_leave).
	KernelNs uint64
	// FixedNs is the thread CPU time of the short call: what one test_run
	// call costs besides the loop.
	FixedNs int64
	// Restarts counts loops that were abandoned on EINTR and measured again.
	Restarts int
	// Rejected counts measurements thrown away because the suite's clock
	// and the kernel's disagreed (see ClocksAgree), or because the long
	// call cost no more than the short ones.
	Rejected int
	// Disagreed says the clocks still disagreed, or the sample stayed at
	// or below zero, after maxRejected tries: the sample is kept, and
	// counted as untrusted.
	Disagreed bool
}

// ErrRunCount reports that a program did not run as often as a loop asked.
var ErrRunCount = errors.New("program run count does not match the repeat count")

func (l *Loop) runs() ([]uint64, error) {
	ns := make([]uint64, 1+len(l.Counters))
	if err := l.Runs.Get(&ns[0]); err != nil {
		return nil, fmt.Errorf("read run counter: %w", err)
	}
	for i, c := range l.Counters {
		if err := c.Var.Get(&ns[i+1]); err != nil {
			return nil, fmt.Errorf("read run counter %s: %w", c.Name, err)
		}
	}
	return ns, nil
}

// checkRuns compares the counters' advance over one measurement (a short
// and a long call) with what repeat asked for.
func (l *Loop) checkRuns(before, after []uint64, repeat uint32) error {
	reps := uint64(repeat) + ShortRepeat
	if got := after[0] - before[0]; got != reps {
		return fmt.Errorf("%w: ran %d times, asked for %d", ErrRunCount, got, reps)
	}
	for i, c := range l.Counters {
		if got, want := after[i+1]-before[i+1], c.PerRepeat*reps+c.PerCall*2; got != want {
			return fmt.Errorf("%w: %s counted %d runs, want %d (%d per repetition, %d per call)",
				ErrRunCount, c.Name, got, want, c.PerRepeat, c.PerCall)
		}
	}
	return nil
}

// callTime is what one test_run call took.
type callTime struct {
	// CPU is the thread CPU time, Wall the monotonic clock's time.
	CPU, Wall int64
	// KernelNs is the kernel's average (0 where it does not time).
	KernelNs uint64
	// Restarted says the kernel abandoned a loop on EINTR (cilium/ebpf
	// then ran the whole loop again and the time is wrong).
	Restarted bool
}

// call runs the loop once and returns the time it took.
func (l *Loop) call(repeat uint32) (callTime, error) {
	var t callTime
	if l.Iterations != nil {
		if repeat > MaxIterations {
			return t, fmt.Errorf("%d iterations: bpf_loop runs at most %d", repeat, MaxIterations)
		}
		if err := l.Iterations.Set(repeat); err != nil {
			return t, fmt.Errorf("set iterations: %w", err)
		}
		l.Anatomy.Next(l, repeat, mark.BPFLoop)
		wall, start := time.Now(), sched.ThreadCPU()
		mark.Open()
		_, err := l.Prog.Run(&ebpf.RunOptions{})
		mark.Close()
		t.CPU, t.Wall = sched.ThreadCPU()-start, time.Since(wall).Nanoseconds()
		return t, err
	}
	// The anatomy's window (package anatomy) holds the call and little
	// else, the same in a long call and a short one.
	l.Anatomy.Next(l, repeat, mark.KernelLoop)
	wall, start := time.Now(), sched.ThreadCPU()
	mark.Open()
	_, total, err := l.Prog.Benchmark(l.Data, int(repeat), func() { t.Restarted = true })
	mark.Close()
	t.CPU, t.Wall = sched.ThreadCPU()-start, time.Since(wall).Nanoseconds()
	if err != nil {
		return callTime{}, err
	}
	t.KernelNs = uint64(total.Nanoseconds())
	return t, nil
}

// minCPUShare is the least share of a bpf_loop-timed long call's wall
// time its thread clock may count. The measuring thread is pinned and
// alone on its CPU, and such a call (a raw_tp or syscall program's
// test_run) neither sleeps nor yields, so the two agree but for
// interrupts; a thread clock far below the wall clock lost time: the
// kernel subtracted steal time the host reported late
// (PARAVIRT_TIME_ACCOUNTING) from this call's runtime
// (docs/method.md#how-a-number-is-made).
// Loops the kernel times have its clock to compare with instead (it
// counts steal time); their calls may also sleep outside the timed loop
// (an XDP test_run updates the dispatcher) and yield inside it
// (cond_resched, which the kernel's timer leaves out), so their wall time
// says nothing.
const minCPUShare = 0.9

// lostTime says the thread clock counted too little of a call's wall time
// (see minCPUShare).
func (t callTime) lostTime() bool { return float64(t.CPU) < minCPUShare*float64(t.Wall) }

// Measure runs a short and a long call of the loop and returns the time per
// repetition. It must run on a locked OS thread (see sched.Pinned). It fails with
// ErrRunCount when the program's counter disagrees with the repetitions
// asked for, and retries loops the kernel abandoned on EINTR. It measures
// the current of the loop and its Layouts.
func (l *Loop) Measure(repeat uint32) (Sample, error) {
	c := l
	if l.layout > 0 {
		c = l.Layouts[l.layout-1]
	}
	return c.measure(repeat)
}

// Layout is which of the loop and its Layouts Measure measures now: 0 the
// loop, i its Layouts[i-1].
func (l *Loop) Layout() int { return l.layout }

// NextLayout makes the next of the loop and its Layouts the one Measure
// measures, after the last the loop itself.
func (l *Loop) NextLayout() { l.layout = (l.layout + 1) % (len(l.Layouts) + 1) }

// measure is Measure of this layout.
func (l *Loop) measure(repeat uint32) (Sample, error) {
	if repeat <= ShortRepeat {
		return Sample{}, fmt.Errorf("repeat %d: must be more than %d", repeat, ShortRepeat)
	}
	s := Sample{Repeat: repeat}
	for s.Restarts <= maxRestarts {
		if l.Switch != nil {
			if err := sched.Elsewhere(l.Switch); err != nil {
				return s, fmt.Errorf("switch state: %w", err)
			}
		}
		if l.Prepare != nil {
			if err := l.Prepare(); err != nil {
				return s, fmt.Errorf("prepare loop: %w", err)
			}
		}
		// A throwaway call first: work the kernel deferred from Prepare
		// (RCU callbacks, freeing after a detach) runs in softirq on this
		// CPU soon after and would land in the short call's time.
		if _, err := l.call(ShortRepeat); err != nil {
			return s, fmt.Errorf("test_run repeat=%d: %w", ShortRepeat, err)
		}
		before, err := l.runs()
		if err != nil {
			return s, err
		}
		sc, err := l.call(ShortRepeat)
		if err != nil {
			return s, fmt.Errorf("test_run repeat=%d: %w", ShortRepeat, err)
		}
		lc, err := l.call(repeat)
		if err != nil {
			return s, fmt.Errorf("test_run repeat=%d: %w", repeat, err)
		}
		after, err := l.runs()
		if err != nil {
			return s, err
		}
		if sc.Restarted || lc.Restarted {
			s.Restarts++
			continue
		}
		short, long, kns := sc.CPU, lc.CPU, lc.KernelNs
		if err := l.checkRuns(before, after, repeat); err != nil {
			return s, err
		}
		s.Ns = float64(long-l.fixedCost(short)) / float64(repeat-ShortRepeat)
		if l.KernelClock {
			s.Ns = float64(kns)
		}
		s.KernelNs = kns
		s.FixedNs = short
		disagree := kns > 0 && !ClocksAgree(s.Ns, float64(kns))
		lost := l.Iterations != nil && lc.lostTime()
		// A long call cannot cost less than a short one: at or below zero
		// the thread clock charged the short call for time not its own,
		// on an emulated CPU too (docs/method.md#a-sample-at-or-below-zero).
		spoiled := !l.KernelClock && s.Ns <= 0
		if spoiled || (disagree || lost) && !l.Emulated {
			// One clock saw time the other did not: work outside the
			// kernel's timed loop landed in the long call, or time inside
			// it that the thread clock leaves out (a vCPU's steal time,
			// and with CONFIG_IRQ_TIME_ACCOUNTING interrupt time, count
			// in the kernel's ktime and the wall clock but not in the
			// task's runtime). Not a measurement of the loop: measure
			// again, after letting the softirq and kworker backlog
			// drain. After maxRejected tries keep the sample, marked: a
			// machine that keeps its clocks apart gets a number said to
			// be untrusted, not a failed run. (On an emulated CPU the
			// clocks never agree for long, and nothing there is a
			// measurement: keep it.)
			if s.Rejected++; s.Rejected > maxRejected {
				s.Disagreed = true
				return s, nil
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		return s, nil
	}
	return s, fmt.Errorf("test_run interrupted %d times in a row", s.Restarts)
}

// ClocksAgree compares the suite's time per repetition with the kernel's.
// The kernel's average is truncated, so ours should lie in [k, k+1), plus
// a quarter ns and 5% for the clocks' own reading noise; a larger
// disagreement means one clock saw something the other did not.
func ClocksAgree(ns, k float64) bool {
	slack := 0.25 + 0.05*k
	return ns >= k-slack && ns <= k+1+slack
}
