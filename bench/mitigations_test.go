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
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
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
	h, err := rig.NewHolder(host.NewNetns(tb), f.sets["0"][0].Drop)
	f.holder = testutil.Must(tb, record.Require, "dispatcher holder", h, err)
	return f
}

// loadHardened loads the xdp.c programs layouts() times with
// net.core.bpf_jit_harden set to level, and puts the sysctl back before it
// returns: hardening (constant blinding) happens when the JIT compiles a
// program, at load, so the programs keep it after the sysctl is restored.
func loadHardened(tb testing.TB, level string) []*bpf.XDPObjects {
	tb.Helper()
	undo, err := journal.ChangeSysctl(hardenSysctl, level)
	if undo != nil {
		defer func() {
			if err := undo(); err != nil {
				tb.Errorf("host: %v", err)
			}
		}()
	}
	if err != nil {
		tb.Fatalf("host: %v", err)
	}
	failpoint(tb, "harden-"+level)
	var loads []*bpf.XDPObjects
	for range layouts() {
		objs := new(bpf.XDPObjects)
		if err := bpf.LoadXDPObjects(objs, nil); err != nil {
			tb.Fatalf("load XDP programs with %s=%s: %v", hardenSysctl, level, err)
		}
		tb.Cleanup(func() { objs.Close() })
		loads = append(loads, objs)
	}
	return loads
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
//     journal.ChangeSysctl) and the levels then coexist and interleave without
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
			record.Skipf(b, "the JIT image size, which hardening changes, is unavailable (net.core.bpf_jit_enable=0?): %v", err)
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
			record.Skipf(b, "program run-time stats (5.1), which prove when stats were on: %v", err)
		}
		if err != nil {
			b.Fatal(err)
		}
		// Stats were on for exactly the runs of the loops that asked,
		// over every visit of the family (the watch began before any).
		row.Report = func(b *testing.B, _ measure.Result) []measure.Figure {
			if err := w.check(); err != nil {
				b.Fatal(err)
			}
			return []measure.Figure{{Unit: "jited-bytes", Value: float64(n)}}
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
