package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

const hardenSysctl = "net.core.bpf_jit_harden"

// hardenLevels are the values of net.core.bpf_jit_harden: 0 off, 1 for
// programs loaded without CAP_BPF only, 2 for every program.
var hardenLevels = []string{"0", "1", "2"}

// mitigationVariant is one row of the family: the toggles a loop runs
// with. The zero value but for prog is the baseline.
type mitigationVariant struct {
	prog   *bpf.XDPProgram // an xdp.c program
	stats  bool
	harden string // "0", "1" or "2": the level the program was loaded at
	spec   *specControl
}

func (v mitigationVariant) name() string {
	stats, spec := "off", "none"
	if v.stats {
		stats = "on"
	}
	if v.spec != nil {
		spec = v.spec.name
	}
	return fmt.Sprintf("prog=%s/stats=%s/harden=%s/spec=%s", v.prog, stats, v.harden, spec)
}

// mitigationVariants: baseline first, then one toggle at a time. parse gets
// the hardening levels only: stats and speculation controls cost the same
// whatever the program does, constant blinding grows with its constants.
func mitigationVariants() []mitigationVariant {
	vs := []mitigationVariant{
		{prog: bpf.XDPProgs.Drop, harden: "0"},
		{prog: bpf.XDPProgs.Drop, harden: "0", stats: true},
		{prog: bpf.XDPProgs.Drop, harden: "1"},
		{prog: bpf.XDPProgs.Drop, harden: "2"},
	}
	for _, c := range specControls {
		vs = append(vs, mitigationVariant{prog: bpf.XDPProgs.Drop, harden: "0", spec: c})
	}
	return append(vs,
		mitigationVariant{prog: bpf.XDPProgs.Parse, harden: "0"},
		mitigationVariant{prog: bpf.XDPProgs.Parse, harden: "1"},
		mitigationVariant{prog: bpf.XDPProgs.Parse, harden: "2"},
	)
}

// mitigationsFamily holds the xdp.c programs per hardening level, loaded
// with net.core.bpf_jit_harden at that level, and more, loaded at 0, that
// are only ever run with run-time stats on: each -bpfbench.layouts times.
type mitigationsFamily struct {
	sets   map[string][]*bpf.XDPObjects
	stats  []*bpf.XDPObjects
	sw     *statsSwitch
	holder *rig.Holder
	frame  []byte
}

func newMitigationsFamily(tb testing.TB) *mitigationsFamily {
	tb.Helper()
	host.RequireRoot(tb)
	f := &mitigationsFamily{sets: map[string][]*bpf.XDPObjects{}, sw: &statsSwitch{}}
	tb.Cleanup(func() {
		if err := f.sw.set(false); err != nil {
			tb.Error(err)
		}
	})
	for _, level := range hardenLevels {
		f.sets[level] = loadHardened(tb, level)
	}
	f.stats = loadHardened(tb, "0")
	var err error
	if f.frame, err = bpf.UDPFrame(64); err != nil {
		tb.Fatal(err)
	}
	f.holder = rig.NewHolder(tb, host.NewNetns(tb), f.sets["0"][0].Drop)
	return f
}

// loadHardened loads the xdp.c programs layouts() times with
// net.core.bpf_jit_harden set to level, and puts the sysctl back before it
// returns: hardening (constant blinding) happens when the JIT compiles a
// program, at load, so the programs keep it after the sysctl is restored.
func loadHardened(tb testing.TB, level string) []*bpf.XDPObjects {
	tb.Helper()
	var loads []*bpf.XDPObjects
	func() {
		s := &scopedTB{TB: tb}
		defer s.end()
		host.SetSysctl(s, hardenSysctl, level)
		failpoint(tb, "harden-"+level)
		for range layouts() {
			objs := new(bpf.XDPObjects)
			if err := bpf.LoadXDPObjects(objs, nil); err != nil {
				tb.Fatalf("load XDP programs with %s=%s: %v", hardenSysctl, level, err)
			}
			tb.Cleanup(func() { objs.Close() })
			loads = append(loads, objs)
		}
	}()
	return loads
}

// scopedTB runs the cleanups registered through it when end is called, not
// when the test ends: host.SetSysctl for the length of a function.
type scopedTB struct {
	testing.TB
	cleanups []func()
}

func (s *scopedTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *scopedTB) end() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// objs returns the loads of the programs variant v runs.
func (f *mitigationsFamily) objs(v mitigationVariant) []*bpf.XDPObjects {
	if v.stats {
		return f.stats
	}
	return f.sets[v.harden]
}

// loop returns v's test_run loop. Its Prepare, which runs on the measuring
// thread before each measurement, turns run-time stats on or off as v
// wants and holds v's program in the dispatcher; spec, when set, runs
// first, on that thread.
func (f *mitigationsFamily) loop(v mitigationVariant, spec func() error) *testrun.Loop {
	return withLayouts(f.objs(v), func(objs *bpf.XDPObjects) *testrun.Loop {
		p := v.prog.Of(objs)
		return &testrun.Loop{Prog: p, Data: f.frame, Runs: objs.Runs, Prepare: func() error {
			if spec != nil {
				if err := spec(); err != nil {
					return err
				}
			}
			if err := f.sw.set(v.stats); err != nil {
				return err
			}
			return f.holder.Hold(p)
		}}
	})
}

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

// BenchmarkMitigations answers: what do the checks and mitigations that can
// change at run time cost one XDP program run, on this kernel? Every
// variant is the xdp.c drop (or parse) program in a test_run loop, held in
// the dispatcher as in BenchmarkXDP, measured in alternating rounds with
// the baseline prog=<p>/stats=off/harden=0/spec=none, and changes one
// thing:
//
//   - stats=on: the kernel's run-time stats (run_time_ns and run_cnt per
//     program: two clock reads per run), turned on through a
//     BPF_ENABLE_STATS descriptor that the suite holds only while the
//     variant is measured, so stats are off while anything else is timed.
//     The sysctl kernel.bpf_stats_enabled is the other way to turn them
//     on; the suite avoids it: the descriptor needs no host change and
//     goes away with the process. The variant fails unless the stats
//     counted exactly its runs and none of the baseline's.
//   - harden=1|2: the program loaded with net.core.bpf_jit_harden at that
//     level (constant blinding: each immediate becomes a random value
//     XORed back at run time). Hardening applies when the JIT compiles a
//     program, so the family loads one copy of the programs per level up
//     front (set the sysctl, load, restore it: journalled by
//     host.SetSysctl) and the levels then coexist and interleave without
//     flipping the sysctl each round. Every variant reports jited-bytes,
//     the JIT image size, so hardening shows even where the time does not
//     move. Level 1 hardens only programs loaded without CAP_BPF: the suite
//     loads as root, so harden=1 compiles to the same image as 0 (equal
//     jited-bytes) and only 2 hardens.
//   - spec=indirect-branch|store-bypass: per-task speculation controls,
//     prctl(PR_SET_SPECULATION_CTRL, PR_SPEC_INDIRECT_BRANCH or
//     PR_SPEC_STORE_BYPASS, PR_SPEC_DISABLE), set on the measuring thread
//     only (the control is per task: per thread) before each of the
//     variant's measurements and cleared before every other loop's, and
//     put back before the thread returns to Go's scheduler. The kernel
//     offers them only when the mitigation mode is prctl or seccomp
//     (spectre_v2_user=, spec_store_bypass_disable=); otherwise the
//     variant skips with the errno prctl returned.
//
// The rows are measured together (measure.Family), a round at a time in
// a shuffled order, so that every row sees the same mix of the machine's
// states; each loop's Prepare sets the stats and controls its row asks for.
//
// What needs a reboot (mitigations=, spectre_v2=, retbleed=, cfi=, ibt=) is
// in the labels; see docs/method.md, "Validating an overhead claim across
// boots". docs/claims.md §2 (a check before each program run, ~1.7 ns) is the
// size of effect the deltas here resolve.
func BenchmarkMitigations(b *testing.B) {
	f := newMitigationsFamily(b)
	// The speculation controls are per thread: this goroutine keeps the
	// measuring thread (measure.Family pins the caller's) until they are
	// put back, and leaves it locked, to die with the goroutine, if one
	// will not go back.
	runtime.LockOSThread()
	spec := f.specState(b)
	defer func() {
		if err := spec.restore(); err != nil {
			b.Errorf("%v (the measuring thread is dropped)", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	var rows []measure.Row
	for _, v := range mitigationVariants() {
		n, err := jitedBytes(v.prog.Of(f.objs(v)[0]))
		if errors.Is(err, ebpf.ErrNotSupported) {
			probe.Skipf(b, "the JIT image size, which hardening changes, is unavailable (net.core.bpf_jit_enable=0?): %v", err)
		}
		if err != nil {
			b.Fatal(err)
		}
		if v.spec != nil && spec.unavailable[v.spec] != "" {
			rows = append(rows, measure.Row{Name: v.name(), Skip: spec.unavailable[v.spec]})
			continue
		}
		row := f.row(v, spec)
		loops, on := []*testrun.Loop{row.Variant}, []bool{v.stats}
		if row.Base != nil {
			loops, on = append(loops, row.Base), append(on, false)
		}
		w, err := watchStats(loops, on)
		if errors.Is(err, ebpf.ErrNotSupported) {
			probe.Skipf(b, "program run-time stats (5.1), which prove when stats were on: %v", err)
		}
		if err != nil {
			b.Fatal(err)
		}
		// Stats were on for exactly the runs of the loops that asked,
		// over every visit of the family (the watch began before any).
		row.Report = func(b *testing.B, _ measure.Result) {
			if err := w.check(); err != nil {
				b.Fatal(err)
			}
			clocks().Report(b, float64(n), "jited-bytes")
		}
		rows = append(rows, row)
	}
	measure.Family(b, benchOptions(), rows)
}

// row is v's row: its loop and, unless v is a baseline, the baseline's,
// each setting the speculation controls as v wants.
func (f *mitigationsFamily) row(v mitigationVariant, spec *specState) measure.Row {
	row := measure.Row{Name: v.name(), Variant: f.loop(v, spec.set(v.spec))}
	if base := (mitigationVariant{prog: v.prog, harden: "0"}); v != base {
		row.Base = f.loop(base, spec.set(nil))
	}
	return row
}

// specState is what the measuring thread's speculation controls were
// before the family, and which of them this kernel offers per task.
type specState struct {
	prev        map[*specControl]int
	unavailable map[*specControl]string
}

// specState reads the controls of the calling thread, which must be
// locked, and fails b when one cannot even be read.
func (f *mitigationsFamily) specState(b *testing.B) *specState {
	b.Helper()
	s := &specState{prev: map[*specControl]int{}, unavailable: map[*specControl]string{}}
	for _, c := range specControls {
		why, err := specAvailable(c)
		if err != nil {
			b.Fatal(err)
		}
		if why != "" {
			s.unavailable[c] = why
			continue
		}
		prev, err := getSpec(c)
		if err != nil {
			b.Fatal(err)
		}
		s.prev[c] = prev
	}
	return s
}

// set is a Prepare that disables control c (none: nil) on the calling
// thread and enables every other control the kernel offers, so that a
// loop runs with only its own row's control, whichever row ran before it.
func (s *specState) set(c *specControl) func() error {
	if len(s.prev) == 0 {
		return nil
	}
	return func() error {
		for _, d := range specControls {
			if _, ok := s.prev[d]; !ok {
				continue
			}
			value := unix.PR_SPEC_ENABLE
			if d == c {
				value = unix.PR_SPEC_DISABLE
			}
			if err := setSpec(d, value); err != nil {
				return err
			}
			if got, err := getSpec(d); err != nil {
				return err
			} else if got&value == 0 {
				return fmt.Errorf("%s reads %s after setting %s", d.cname, specValueName(got), specValueName(value))
			}
		}
		return nil
	}
}

// restore puts the calling thread's controls back as they were.
func (s *specState) restore() error {
	for c, prev := range s.prev {
		if err := setSpec(c, unix.PR_SPEC_ENABLE); err != nil {
			return fmt.Errorf("put back %s on the measuring thread: %w", c.cname, err)
		}
		if now, err := getSpec(c); err != nil || now != prev {
			return fmt.Errorf("%s on the measuring thread is %s after restoring, was %s: %v", c.cname, specValueName(now), specValueName(prev), err)
		}
	}
	return nil
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

func readHarden(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/core/bpf_jit_harden")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestHardenReload checks that each level's programs were compiled at
// that level: hardened (larger) at 2, as at 0 at 1 for a root loader, and
// that the sysctl is back as it was once the family is set up.
func TestHardenReload(t *testing.T) {
	host.RequireRoot(t)
	was := readHarden(t)
	f := newMitigationsFamily(t)
	if now := readHarden(t); now != was {
		t.Errorf("%s is %s after loading, was %s", hardenSysctl, now, was)
	}
	for _, prog := range []*bpf.XDPProgram{bpf.XDPProgs.Drop, bpf.XDPProgs.Parse} {
		size := map[string]uint32{}
		for _, level := range hardenLevels {
			n, err := jitedBytes(prog.Of(f.sets[level][0]))
			if err != nil {
				t.Fatal(err)
			}
			size[level] = n
		}
		t.Logf("%s: jited bytes at harden 0/1/2: %d/%d/%d", prog, size["0"], size["1"], size["2"])
		if size["2"] <= size["0"] {
			t.Errorf("%s: %d JITed bytes at harden=2, %d at 0: the program was not reloaded hardened", prog, size["2"], size["0"])
		}
		if size["1"] != size["0"] {
			t.Errorf("%s: %d JITed bytes at harden=1, %d at 0: level 1 should not harden a root loader's program", prog, size["1"], size["0"])
		}
	}
}

// TestHardenKilled SIGKILLs a run while it has net.core.bpf_jit_harden
// changed (loading the harden=2 programs of BenchmarkMitigations), checks
// that the change outlives it, and that the next run restores it and says
// so.
func TestHardenKilled(t *testing.T) {
	host.RequireRoot(t)
	before := takeSnapshot(t)
	was := readHarden(t)
	level := "2"
	if was == "2" {
		level = "1"
	}

	cmd := suiteCmd("", []string{failEnv + "=block:harden-" + level}, true, "-test.run=^$", "-test.bench=^BenchmarkMitigations$", "-test.benchtime=1x")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	blocked := make(chan struct{})
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "blocking at harden-"+level) {
				close(blocked)
			}
		}
	}()
	select {
	case <-blocked:
	case <-done:
		cmd.Wait()
		killed = true // ended by itself
		t.Fatalf("the run ended before it changed %s:\n%s", hardenSysctl, out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not reach the harden-%s load in 2 minutes:\n%s", level, out.String())
	}
	if now := readHarden(t); now != level {
		t.Fatalf("the run says it is loading at harden=%s, but %s reads %s", level, hardenSysctl, now)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done // the pipe ends with the process
	cmd.Wait()
	killed = true
	if now := readHarden(t); now != level {
		t.Fatalf("after SIGKILL %s reads %s, want %s still: nothing can restore it but the next run", hardenSysctl, now, level)
	}
	if _, err := os.Stat(fmt.Sprintf("%s/journal-%d.json", host.StateDir, pid)); err != nil {
		t.Errorf("the killed run left no journal: %v", err)
	}

	stdout, errOut, err := runSuite(t, nil, "-test.run=^$")
	if err != nil {
		t.Fatalf("the next run failed: %v\n%s\n%s", err, stdout, errOut)
	}
	t.Logf("the next run says:\n%s", strings.TrimSpace(errOut))
	want := fmt.Sprintf("bpfbench: repaired: restored %s=%s left as %s by killed run pid %d", hardenSysctl, was, level, pid)
	if !strings.Contains(errOut, want) {
		t.Errorf("the next run did not report the repair %q:\n%s", want, errOut)
	}
	if now := readHarden(t); now != was {
		t.Errorf("after the next run %s reads %s, want %s", hardenSysctl, now, was)
	}
	requireSameState(t, before)
}
