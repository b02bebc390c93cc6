package bench

// The Mitigations family's run-time stats switch (BPF_ENABLE_STATS) and
// the check that a row's stats were on or off as it said.

import (
	"fmt"
	"io"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// statsSwitch turns on the kernel's run-time stats of every BPF program
// (run_time_ns, run_cnt) by holding a BPF_ENABLE_STATS file descriptor:
// while any such descriptor is open, each run of a program reads the clock
// twice and updates per-CPU counters (the bpf_stats_enabled_key static
// key, 5.8). Closing the descriptor turns them off, and so does the
// process dying, however it dies: nothing to journal or repair. The other
// way, the sysctl kernel.bpf_stats_enabled, is a host setting the suite
// would have to restore; it avoids it.
type statsSwitch struct{ fd io.Closer }

func (s *statsSwitch) set(on bool) error {
	if on == (s.fd != nil) {
		return nil
	}
	if on {
		fd, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			return fmt.Errorf("enable run-time stats (BPF_ENABLE_STATS): %w", err)
		}
		s.fd = fd
		return nil
	}
	err := s.fd.Close()
	s.fd = nil
	if err != nil {
		return fmt.Errorf("close BPF_ENABLE_STATS descriptor: %w", err)
	}
	return nil
}

// progStats is what the kernel's run-time stats say about a program, and
// what its own run counter says.
type progStats struct {
	count, runs uint64
	runtime     time.Duration
}

func readProgStats(p *ebpf.Program, runs *ebpf.Variable) (progStats, error) {
	s, err := p.Stats()
	if err != nil {
		return progStats{}, fmt.Errorf("read run-time stats of %v: %w", p, err)
	}
	var n uint64
	if err := runs.Get(&n); err != nil {
		return progStats{}, fmt.Errorf("read run counter: %w", err)
	}
	return progStats{count: s.RunCount, runs: n, runtime: s.Runtime}, nil
}

// statsWatch records the stats of the loops a measurement runs, each
// layout of each, to check afterwards that stats were on for exactly the
// loops that asked for them.
type statsWatch struct {
	loops []*testrun.Loop
	on    []bool
	// before[i][j] is the stats of loopLayouts(loops[i])[j].
	before [][]progStats
}

func watchStats(loops []*testrun.Loop, on []bool) (*statsWatch, error) {
	w := &statsWatch{loops: loops, on: on, before: make([][]progStats, len(loops))}
	for i, l := range loops {
		for _, c := range loopLayouts(l) {
			s, err := readProgStats(c.Prog, c.Runs)
			if err != nil {
				return nil, err
			}
			w.before[i] = append(w.before[i], s)
		}
	}
	return w, nil
}

// check fails unless every run of a loop that wanted stats was counted by
// them, and no run of any other loop was: stats really were on, and were
// off while everything else was timed. A layout may not have run (a
// -benchtime 100x run measures one round, in one layout); a loop that
// wanted stats must have run in one of them.
func (w *statsWatch) check() error {
	for i, l := range w.loops {
		ran := false
		for j, c := range loopLayouts(l) {
			now, err := readProgStats(c.Prog, c.Runs)
			if err != nil {
				return err
			}
			b := w.before[i][j]
			count, runs, rt := now.count-b.count, now.runs-b.runs, now.runtime-b.runtime
			ran = ran || runs > 0
			switch {
			case w.on[i] && runs > 0 && (count != runs || rt <= 0):
				return fmt.Errorf("%v ran %d times with run-time stats on, but they counted %d runs in %v", c.Prog, runs, count, rt)
			case !w.on[i] && count != 0:
				return fmt.Errorf("%v ran %d times with run-time stats off, but they counted %d runs: "+
					"stats are on elsewhere (kernel.bpf_stats_enabled, or another process's BPF_ENABLE_STATS descriptor), so nothing here is measured without them",
					c.Prog, runs, count)
			}
		}
		if w.on[i] && !ran {
			return fmt.Errorf("%v wanted run-time stats on but never ran", l.Prog)
		}
	}
	return nil
}

func jitedBytes(p *ebpf.Program) (uint32, error) {
	info, err := p.Info()
	if err != nil {
		return 0, fmt.Errorf("program info of %v: %w", p, err)
	}
	n, err := info.JitedSize()
	if err != nil {
		return 0, fmt.Errorf("JIT image size of %v: %w", p, err)
	}
	return n, nil
}

// TestStatsToggle checks the stats switch by behaviour: a loop measured
// with stats on has every run counted by them, and a loop measured with
// stats off, before and after, has none; once the switch is off again,
// runs are not counted.
func TestStatsToggle(t *testing.T) {
	f := newMitigationsFamily(t)
	onV := mitigationVariant{prog: bpf.XDPProgs.Drop, harden: "0", stats: true}
	offV := mitigationVariant{prog: bpf.XDPProgs.Drop, harden: "0"}
	on, off := f.loop(onV, nil), f.loop(offV, nil)
	// One load each: which load a measurement takes is not what this
	// checks, and the check that a loop ran reads the first.
	on.Layouts, off.Layouts = nil, nil
	on.Emulated, off.Emulated = probe.Emulated(), probe.Emulated()
	err := sched.Pinned(benchOptions().CPU, func() error {
		for i, l := range []*testrun.Loop{off, on, off, on, off} {
			w, err := watchStats([]*testrun.Loop{on, off}, []bool{l == on, false})
			if err != nil {
				return err
			}
			if _, err := l.Measure(10000); err != nil {
				return err
			}
			if err := w.check(); err != nil {
				return fmt.Errorf("measurement %d: %w", i, err)
			}
			// check passes a loop that did not run at all: make sure it ran.
			j := 1
			if l == on {
				j = 0
			}
			if a, err := readProgStats(l.Prog, l.Runs); err != nil {
				return err
			} else if a.runs == w.before[j][0].runs {
				return fmt.Errorf("measurement %d did not run the program", i)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sw.set(false); err != nil {
		t.Fatal(err)
	}
	// With the switch off, runs are not counted, and the check that
	// stats were on says so.
	w, err := watchStats([]*testrun.Loop{on}, []bool{true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := on.Prog.Run(&ebpf.RunOptions{Data: f.frame}); err != nil {
		t.Fatal(err)
	}
	after, err := readProgStats(on.Prog, on.Runs)
	if err != nil {
		t.Fatal(err)
	}
	if b := w.before[0][0]; after.runs != b.runs+1 || after.count != b.count {
		t.Errorf("with the switch off: %d runs, stats counted %d; want 1 and 0", after.runs-b.runs, after.count-b.count)
	}
	if err := w.check(); err == nil {
		t.Error("a run with stats off passed the check that they were on")
	}
	// A loop that wanted stats and ran in none of its layouts.
	if w, err = watchStats([]*testrun.Loop{f.loop(onV, nil)}, []bool{true}); err != nil {
		t.Fatal(err)
	}
	if err := w.check(); err == nil {
		t.Error("a loop that never ran passed the check that stats were on for its runs")
	}
}
