package bench

// The Trampoline family's tests: the driver's counts, the kernel's cap,
// the freplace chain's semantics, fsession and multi-link counts, and
// that a run leaves nothing behind.

import (
	"errors"
	"os"
	"strings"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// TestTrampolineDriverCounts runs the kernel-function driver as the
// benchmark does: it must call its function once per iteration asked for,
// run once per test_run call, and a hook count that cannot be right must
// fail the measurement.
func TestTrampolineDriverCounts(t *testing.T) {
	f := newTrampolineFamily(t)
	drv, err := f.driver("helper")
	probe.Require(t, err, "load the helper's driver")
	loop := &testrun.Loop{
		Prog: drv, Runs: f.core.Calls, Iterations: f.core.Iterations,
		Counters: []testrun.Counter{{Name: "driver runs", Var: f.core.Runs, PerCall: 1}},
		Emulated: probe.Emulated(),
	}
	err = sched.Pinned(benchOptions().CPU, func() error {
		s, err := loop.Measure(100_000)
		if err != nil {
			return err
		}
		if s.Ns <= 0 || s.KernelNs != 0 {
			t.Errorf("sample %+v: want a positive time per call and no kernel time", s)
		}
		// No hook is attached: claiming one must fail.
		loop.Counters = append(loop.Counters, testrun.Counter{Name: "hook_runs", Var: f.core.HookRuns, PerRepeat: 1})
		if _, err := loop.Measure(1000); !errors.Is(err, testrun.ErrRunCount) {
			t.Errorf("a hook that never ran passed the run count check: %v", err)
		}
		if _, err := loop.Measure(testrun.MaxIterations + 1); err == nil {
			t.Error("more iterations than bpf_loop runs passed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTrampolineCap: the kernel links BPF_MAX_TRAMP_LINKS programs to one
// trampoline, runs every one of them, and refuses one more with E2BIG.
func TestTrampolineCap(t *testing.T) {
	host.RequireRoot(t)
	probe.Require(t, probe.Tracing(), "trampolines")
	f := newTrampolineFamily(t)
	tgt, err := f.load("target", nil)
	probe.Require(t, err, "load the target")
	n := probe.TrampolineCap()
	for i := 0; i <= n; i++ {
		prog := "on_entry"
		if i%2 == 1 {
			prog = "on_exit"
		}
		p, err := f.load(prog, attachTo(prog, tgt, "target"))
		probe.Require(t, err, "load "+prog)
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		switch {
		case i < n && err != nil:
			t.Fatalf("attach program %d of %d: %v", i+1, n, err)
		case i == n && !errors.Is(err, unix.E2BIG):
			t.Fatalf("attach program %d past the cap of %d: got %v, want E2BIG", i+1, n, err)
		}
	}
	var before, after uint64
	if err := f.core.HookRuns.Get(&before); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tgt.Test(f.frame); err != nil {
		t.Fatal(err)
	}
	if err := f.core.HookRuns.Get(&after); err != nil {
		t.Fatal(err)
	}
	if after-before != uint64(n) {
		t.Errorf("one run of the hooked program ran %d hooks, want %d", after-before, n)
	}
}

// TestTrampolineFreplaceChain checks the dispatcher's semantics, libxdp's:
// each replaced stub runs its program and the chain goes on on XDP_PASS; a
// stub nothing replaced returns the dispatcher's own value and the chain
// goes on too; the inlined program does the same work.
func TestTrampolineFreplaceChain(t *testing.T) {
	host.RequireRoot(t)
	probe.Require(t, probe.Tracing(), "trampolines")
	f := newTrampolineFamily(t)
	const stubs, replaced = 4, 3
	setN := numProgs(stubs)
	disp, err := f.load("dispatcher", setN)
	probe.Require(t, err, "load the dispatcher")
	probe.Require(t, f.replaceStubs(disp, replaced), "freplace")
	single, err := f.load("single", setN)
	probe.Require(t, err, "load the single program")
	for _, tc := range []struct {
		name  string
		p     *ebpf.Program
		chain uint64
	}{{"dispatcher", disp, replaced}, {"single", single, stubs}} {
		var before, after uint64
		if err := f.core.ChainRuns.Get(&before); err != nil {
			t.Fatal(err)
		}
		ret, _, err := tc.p.Test(f.frame)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.core.ChainRuns.Get(&after); err != nil {
			t.Fatal(err)
		}
		if ret != 2 || after-before != tc.chain { // XDP_PASS
			t.Errorf("%s returned %d and ran %d chained programs, want 2 (XDP_PASS) and %d", tc.name, ret, after-before, tc.chain)
		}
	}
}

// trampolinePrograms counts the loaded programs that belong to this family
// (the kernel keeps the first 15 characters of a name).
func trampolinePrograms(t *testing.T) int {
	t.Helper()
	spec, err := bpf.LoadTrampoline()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for name := range spec.Programs {
		names[name[:min(len(name), unix.BPF_OBJ_NAME_LEN-1)]] = true
	}
	n := 0
	var id ebpf.ProgramID
	for {
		id, err = ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // unloaded meanwhile
		}
		if info, err := p.Info(); err == nil && names[info.Name] {
			n++
		}
		p.Close()
	}
}

// requireNoTrampolinePrograms fails unless the family's programs are gone
// (they are freed when their last descriptor closes, which for an exited
// child can take a moment).
func requireNoTrampolinePrograms(t *testing.T) {
	t.Helper()
	requireSameState(t, takeSnapshot(t)) // waits for the exited child's objects
	if n := trampolinePrograms(t); n != 0 {
		t.Fatalf("%d programs of the trampoline family are still loaded", n)
	}
}

// trampolineEveryKind selects a row of every kind: every baseline, every
// hook with one program, both with two, and chains of one.
const trampolineEveryKind = "^BenchmarkTrampoline$///^(progs=[012]|chain=1)$"

// TestTrampolineLeavesNothing runs a row of every kind once, as a user would, and
// checks that no link, namespace, XDP attachment or program of the family
// is left.
func TestTrampolineLeavesNothing(t *testing.T) {
	host.RequireRoot(t)
	before := takeSnapshot(t)
	if n := trampolinePrograms(t); n != 0 {
		t.Fatalf("%d programs of the trampoline family are loaded before the run", n)
	}
	stdout, stderr, err := runSuite(t, nil, "-test.run=^$", "-test.bench="+trampolineEveryKind, "-test.benchtime=1x")
	if err != nil {
		t.Fatalf("suite failed: %v\n%s\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "BenchmarkTrampoline/target=xdp/attach=none/progs=0") {
		t.Fatalf("the baseline did not run:\n%s", stdout)
	}
	requireSameState(t, before)
	requireNoTrampolinePrograms(t)
}

// TestTrampolineSession: one fsession program on an XDP program runs at
// its entry and at its return, and bpf_session_is_return tells the two
// apart; a multi-link program runs once per call of its one function.
func TestTrampolineSession(t *testing.T) {
	host.RequireRoot(t)
	probe.Require(t, probe.Tracing(), "trampolines")
	probe.Require(t, probe.HaveAttachType("BPF_TRACE_FSESSION", "Linux 7.0"), "fsession")
	f := newTrampolineFamily(t)
	tgt, err := f.load("target", nil)
	probe.Require(t, err, "load the target")
	p, err := f.load("on_session", attachTo("on_session", tgt, "target"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := attachSession(p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	delta := func(run func() error, vars ...*ebpf.Variable) []uint64 {
		t.Helper()
		before := make([]uint64, len(vars))
		for i, v := range vars {
			if err := v.Get(&before[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := run(); err != nil {
			t.Fatal(err)
		}
		d := make([]uint64, len(vars))
		for i, v := range vars {
			var after uint64
			if err := v.Get(&after); err != nil {
				t.Fatal(err)
			}
			d[i] = after - before[i]
		}
		return d
	}
	const runs = 5
	d := delta(func() error {
		_, err := tgt.Run(&ebpf.RunOptions{Data: f.frame, Repeat: runs})
		return err
	}, f.core.HookRuns, f.core.SessionReturns)
	if d[0] != 2*runs || d[1] != runs {
		t.Errorf("%d runs of the hooked program: the fsession program ran %d times, %d of them at a return; want %d and %d", runs, d[0], d[1], 2*runs, runs)
	}

	probe.Require(t, probe.HaveAttachType("BPF_TRACE_FENTRY_MULTI", multiSince), "tracing multi-links")
	drv, err := f.driver("helper")
	probe.Require(t, err, "load the helper's driver")
	m, err := f.load("helper_fentry_multi", nil)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := bpf.AttachTracingMulti(m, bpf.AttachFEntryMulti, trampHelper)
	if err != nil {
		t.Fatal(err)
	}
	defer ml.Close()
	const calls = 7
	if err := f.core.Iterations.Set(uint32(calls)); err != nil {
		t.Fatal(err)
	}
	d = delta(func() error {
		_, err := drv.Run(&ebpf.RunOptions{})
		return err
	}, f.core.HookRuns, f.core.Calls)
	if d[0] != calls || d[1] != calls {
		t.Errorf("a driver run of %d calls of %s: the fentry-multi program ran %d times over %d calls, want %d", calls, trampHelper, d[0], d[1], calls)
	}
}
