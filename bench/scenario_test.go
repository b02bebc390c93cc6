package bench

// The scenario tests run the real benchmark binary (this test binary, run
// again as a child) the ways users break it: interrupted, terminated,
// killed, twice at once, with bad flags, failing half-way, without root. After
// each they check that the machine is as it was: namespaces, BPF programs
// and links, XDP on host devices, sysctls (snapshot.State), and the host's own
// interfaces.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/host/snapshot"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/internal/child"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// TestHelperProcess is not a test of its own: it is the child process of
// the scenario tests that need a run holding host state at a known point.
// In mode scenarioHold it takes the lock (TestMain), toggles heldSysctl,
// creates a namespace with a veth pair, attaches an XDP program to it in
// driver mode, prints its ready line and holds all that until its stdin is
// closed; then the cleanups undo it.
func TestHelperProcess(t *testing.T) {
	switch mode := child.Mode(); mode {
	case "":
		t.Skipf("the child process of the scenario tests (%s=%s); it tests nothing on its own", child.ModeEnv, scenarioHold)
	case scenarioHold:
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
	host.RequireRoot(t)
	was := currentSysctl(t, heldSysctl)
	value := "1"
	if was == "1" {
		value = "0"
	}
	journal.SetSysctl(t, heldSysctl, value)
	ns := host.NewNetns(t)
	pairs, err := ns.AddVeth(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var objs bpf.XDPObjects
	probe.Require(t, bpf.LoadXDPObjects(&objs, nil), "load XDP programs")
	t.Cleanup(func() { objs.Close() })
	var l link.Link
	err = ns.Do(func() error {
		var err error
		l, err = link.AttachXDP(link.XDPOptions{Program: objs.Drop, Interface: pairs[0].A.Index, Flags: link.XDPDriverMode})
		return err
	})
	probe.Require(t, err, "attach XDP to "+pairs[0].A.Name+" in driver mode")
	t.Cleanup(func() { l.Close() })
	child.Ready("sysctl="+heldSysctl, "value="+value, "was="+was, "netns="+ns.Name)
	io.Copy(io.Discard, os.Stdin)
}

// TestScenarioSignal interrupts (SIGINT, as Ctrl-C does) and terminates
// (SIGTERM) a run of the dispatcher family while its 48 fillers are
// attached to veth devices in its namespaces: the run must say what it
// restored, exit with 128+signal, and leave nothing behind.
func TestScenarioSignal(t *testing.T) {
	host.RequireRoot(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(strings.ToLower(unix.SignalName(sig)), func(t *testing.T) {
			before := takeSnapshot(t)
			c := startSuite(t, child.Options{Lock: suiteLock.File(), Args: []string{"-test.run=^$",
				"-test.bench=^BenchmarkDispatcher$/^dispatcher=full$/^fill=native$", "-test.benchtime=60s"}})
			// Mid-run: its namespaces exist (the XDP family's and the
			// two fillers') and the fillers are attached.
			var names []string
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if !c.Running() {
					out, errOut := c.Output()
					t.Fatalf("the run exited (%v) before it was mid-run:\n%s\n%s", c.Err(), out, errOut)
				}
				if time.Now().After(deadline) {
					t.Fatalf("the run did not get its fillers attached in 2 minutes")
				}
				names = namespacesOf(t, c.PID())
				if len(names) < 3 {
					continue
				}
				// Mid-run: the state moves, so no settled snapshot here.
				if now, err := snapshot.Take(); err == nil && now.Links >= before.Links+rig.DispatcherMax {
					break
				}
			}
			if err := c.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := c.Wait(t, childTimeout())
			out, errOut := c.Output()
			if code != 128+int(sig) {
				t.Fatalf("exit status %d after %v, want %d:\n%s\n%s", code, sig, 128+int(sig), out, errOut)
			}
			if want := fmt.Sprintf("bpfbench: %v: restoring host state\n", sig); !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
			requireGone(t, names...)
			t.Logf("after %v: exit %d, stderr:\n%s", sig, code, errOut)
			requireSameState(t, before)
		})
	}
}

// TestScenarioSIGKILL kills a run holding a changed sysctl, a namespace
// with a veth pair and an XDP program attached to it, then runs the suite
// again. The namespace and the XDP link are held by the killed process's
// descriptors, so nothing of them is left even before the next run; the
// sysctl is all it leaves, and the next run must repair it, saying so,
// and nothing else.
func TestScenarioSIGKILL(t *testing.T) {
	host.RequireRoot(t)
	before := takeSnapshot(t)
	c := startSuite(t, child.Options{Mode: scenarioHold, Lock: suiteLock.File(), Stdin: true})
	ready := parseReady(t, c.WaitReady(t, childTimeout()))
	pid := c.PID()
	held := takeSnapshot(t)
	if held.Sysctls[heldSysctl] != ready["value"] || !slices.Contains(namespacesOf(t, pid), ready["netns"]) ||
		held.XDPProgs <= before.XDPProgs || held.Links <= before.Links {
		t.Fatalf("the helper does not hold what it says (%v): %s", ready, before.Diff(held))
	}

	if err := c.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.Wait(t, childTimeout())
	if s := c.Signaled(); s != syscall.SIGKILL {
		t.Fatalf("the helper ended with %v, not SIGKILL", c.Err())
	}
	// The kernel frees the namespace, the link and the program once the
	// dead process's descriptors are closed; the sysctl stays for the
	// repair.
	var killed snapshot.State
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		killed = takeSnapshot(t)
		if killed.XDPProgs == before.XDPProgs && killed.Links == before.Links || time.Now().After(deadline) {
			break
		}
	}
	if killed.XDPProgs != before.XDPProgs || killed.Links != before.Links {
		t.Errorf("after SIGKILL an XDP program or BPF link is left: %s", before.Diff(killed))
	}
	requireGone(t, ready["netns"])
	if killed.Sysctls[heldSysctl] != ready["value"] {
		t.Fatalf("%s is %s after SIGKILL, not the helper's %s, so the repair is not tested", heldSysctl, killed.Sysctls[heldSysctl], ready["value"])
	}
	if _, err := os.Stat(filepath.Join(host.StateDir, fmt.Sprintf("journal-%d.json", pid))); err != nil {
		t.Fatalf("the killed run left no journal: %v", err)
	}
	t.Logf("after SIGKILL: %s", before.Diff(killed))

	stdout, stderr, err := runSuite(t, nil, xdpQuick...)
	if err != nil || !strings.Contains(stdout, "BenchmarkXDP/prog=drop/size=64") {
		t.Fatalf("the run after the killed one failed or has no result: %v\n%s\n%s", err, stdout, stderr)
	}
	want := fmt.Sprintf("bpfbench: repaired: restored %s=%s left as %s by killed run pid %d\n", heldSysctl, ready["was"], ready["value"], pid)
	if !strings.Contains(stderr, want) || strings.Count(stderr, "bpfbench: repaired: ") != 1 {
		t.Errorf("the next run does not say %q alone; stderr:\n%s", want, stderr)
	}
	t.Logf("the next run: %s", stderr)
	requireSameState(t, before)
	if _, err := os.Stat(filepath.Join(host.StateDir, fmt.Sprintf("journal-%d.json", pid))); !os.IsNotExist(err) {
		t.Errorf("the journal of the killed run is still there after the repair (%v)", err)
	}
}

// TestScenarioTwoRuns starts a run (A) that holds the lock and host state,
// then a second run (B) with -bpfbench.lockwait=1s, which must fail naming
// A's PID having changed nothing, then a third (C) with a long lockwait,
// which must wait until A has finished and restored its state, then run.
func TestScenarioTwoRuns(t *testing.T) {
	host.RequireRoot(t)
	before := takeSnapshot(t)
	withoutSuiteLock(t, func() {
		a := startSuite(t, child.Options{Mode: scenarioHold, Stdin: true,
			Args: []string{fmt.Sprintf("-bpfbench.lockwait=%v", *flagLockWait)}})
		ready := parseReady(t, a.WaitReady(t, childTimeout()))
		watch := watchState(t)
		held := takeSnapshot(t)
		if held.Sysctls[heldSysctl] != ready["value"] || !slices.Contains(namespacesOf(t, a.PID()), ready["netns"]) {
			t.Fatalf("A does not hold what it says (%v): %s", ready, before.Diff(held))
		}

		b := startSuite(t, child.Options{Args: append(slices.Clone(xdpQuick), "-bpfbench.lockwait=1s")})
		code := b.Wait(t, childTimeout())
		out, errOut := b.Output()
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		switch {
		case code != 1:
			t.Errorf("B exited with %d while A held the lock, want 1:\n%s\n%s", code, out, errOut)
		case len(lines) != 1 || !strings.Contains(errOut, fmt.Sprintf("held by pid %d (", a.PID())) || !strings.Contains(errOut, "gave up after waiting 1s"):
			t.Errorf("B's error is not one line naming A's pid %d and the wait:\n%s", a.PID(), errOut)
		}
		t.Logf("B: exit %d: %s", code, errOut)
		if evs, _ := watch.byPID(t, b.PID()); len(evs) > 0 {
			t.Errorf("B, which did not get the lock, changed host state: %v", evs)
		}
		if d := held.Diff(takeSnapshot(t)); d != "" {
			t.Errorf("the machine changed while B tried to run: %s", d)
		}

		// C holds host state too, a journaled sysctl, and lets go of it at
		// once: its stdin is empty.
		c := startSuite(t, child.Options{Mode: scenarioHold, Args: []string{fmt.Sprintf("-bpfbench.lockwait=%v", *flagLockWait)}})
		for deadline := time.Now().Add(time.Minute); !lockFileOpen(c.PID()); time.Sleep(10 * time.Millisecond) {
			if !c.Running() || time.Now().After(deadline) {
				out, errOut := c.Output()
				t.Fatalf("C did not start waiting for the lock (%v):\n%s\n%s", c.Err(), out, errOut)
			}
		}
		if err := a.Stdin().Close(); err != nil {
			t.Fatal(err)
		}
		if code := a.Wait(t, childTimeout()); code != 0 {
			out, errOut := a.Output()
			t.Fatalf("A exited with %d:\n%s\n%s", code, out, errOut)
		}
		if code := c.Wait(t, childTimeout()); code != 0 {
			out, errOut := c.Output()
			t.Fatalf("C, waiting for A, exited with %d:\n%s\n%s", code, out, errOut)
		}
		if out, _ := c.Output(); !strings.Contains(out, child.ReadyPrefix) {
			t.Errorf("C never held its state:\n%s", out)
		}
		// C changed nothing before A had deleted its journal, the last
		// thing A does before it lets go of the lock.
		aDone := slices.Index(watch.read(t), "delete "+filepath.Join(host.StateDir, fmt.Sprintf("journal-%d.json", a.PID())))
		evs, first := watch.byPID(t, c.PID())
		switch {
		case aDone < 0:
			t.Errorf("A's journal was never deleted: %v", watch.events)
		case first < 0:
			t.Errorf("C created no journal: %v", watch.events)
		case first < aDone:
			t.Errorf("C changed host state (%v) before A had restored its own (event %d): %v", evs, aDone, watch.events)
		default:
			t.Logf("C waited for A: A deleted its journal (event %d: %s), then C made its first change (event %d: %s)",
				aDone, watch.events[aDone], first, watch.events[first])
		}
	})
	requireSameState(t, before)
}

// TestScenarioBadFlags passes each suite flag a bad value: the run must exit
// with status 2 and one line naming the flag and what it accepts, before
// anything on the system changes. It needs no privilege.
func TestScenarioBadFlags(t *testing.T) {
	var before snapshot.State
	if host.Privileged() {
		before = takeSnapshot(t)
	}
	watch := watchState(t)
	for _, tc := range []struct{ arg, flag string }{
		{"-bpfbench.cpu=99", "-bpfbench.cpu"},
		{"-bpfbench.cpu=-5", "-bpfbench.cpu"},
		{"-bpfbench.cpu=last", "-bpfbench.cpu"},
		{"-bpfbench.calltime=1ns", "-bpfbench.calltime"},
		{"-bpfbench.calltime=5s", "-bpfbench.calltime"},
		{"-bpfbench.calltime=abc", "-bpfbench.calltime"},
		{"-bpfbench.lockwait=-1s", "-bpfbench.lockwait"},
		{"-bpfbench.lockwait=", "-bpfbench.lockwait"},
		{"-bpfbench.interleave=maybe", "-bpfbench.interleave"},
		{"-bpfbench.layouts=0", "-bpfbench.layouts"},
		{"-bpfbench.layouts=65", "-bpfbench.layouts"},
	} {
		// Without the lock: a run that got past the flags would wait for
		// it, not change anything.
		c := startSuite(t, child.Options{Args: []string{"-test.run=^$", "-test.bench=.", "-test.benchtime=1x", tc.arg}})
		code := c.Wait(t, childTimeout())
		out, errOut := c.Output()
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "bpfbench: ") ||
			!strings.Contains(lines[0], tc.flag) || !strings.Contains(lines[0], "want ") {
			t.Errorf("%s: exit %d, want 2 and one line naming %s and what it accepts; stdout:\n%s\nstderr:\n%s", tc.arg, code, tc.flag, out, errOut)
			continue
		}
		if evs, _ := watch.byPID(t, c.PID()); len(evs) > 0 {
			t.Errorf("%s: the run changed host state: %v", tc.arg, evs)
		}
		t.Logf("%s: exit %d: %s", tc.arg, code, lines[0])
	}
	if host.Privileged() {
		requireSameState(t, before)
	}
}

// TestScenarioFailure fails each family at its fullest state, by its
// fault point, as a run failing half-way would: the XDP family right
// after its setup (namespace, programs loaded, one held in the
// dispatcher), the dispatcher with 49 programs attached, the attach rig
// with the dispatcher full, and a trampoline row of every kind once its
// hooks are attached. The run must fail where it was told to and leave
// nothing behind.
func TestScenarioFailure(t *testing.T) {
	host.RequireRoot(t)
	for _, c := range []struct {
		name, point string
		args        []string
		liveFrames  bool
		// mayNotReach says the point may not be reached here (no hook
		// could be attached): a run that succeeded without a result
		// then skips.
		mayNotReach bool
		after       func(*testing.T)
	}{
		{name: "xdp", point: "xdp-setup", args: []string{"-test.bench=^BenchmarkXDP$"}},
		{name: "dispatcher", point: "dispatcher-full", args: []string{"-test.bench=^BenchmarkDispatcher$/^dispatcher=full$/^fill=native$"}},
		{name: "attach", point: "attach-full", liveFrames: true,
			args: []string{"-test.bench=^BenchmarkAttach$/^action=drop$/^mode=native$/^prog=drop$/^dispatcher=full$"}},
		{name: "trampoline", point: "trampoline-attached", mayNotReach: true, after: requireNoTrampolinePrograms,
			args: []string{"-test.bench=" + trampolineEveryKind, "-test.v"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.liveFrames {
				requireLiveFrames(t)
			}
			before := takeSnapshot(t)
			args := append([]string{"-test.run=^$", "-test.benchtime=1x"}, c.args...)
			stdout, stderr, err := runSuite(t, []string{failEnv + "=" + c.point}, args...)
			switch {
			case err == nil && c.mayNotReach && !strings.Contains(stdout, "delta-ns/op"):
				t.Skipf("nothing could be attached on this kernel, so no row reached %s:\n%s", c.point, stdout)
			case err == nil:
				t.Fatalf("the run succeeded although told to fail at %s:\n%s", c.point, stdout)
			}
			if !strings.Contains(stdout+stderr, "failing on purpose at "+c.point) {
				t.Fatalf("the run failed, but not where it was told to: %v\n%s\n%s", err, stdout, stderr)
			}
			requireSameState(t, before)
			if c.after != nil {
				c.after(t)
			}
		})
	}
}

// TestScenarioNotRoot runs every test and benchmark as nobody: every
// benchmark and every test that needs privilege skips saying how to run it,
// the tests that need none pass, the run succeeds and changes nothing.
func TestScenarioNotRoot(t *testing.T) {
	host.RequireRoot(t)
	before := takeSnapshot(t)
	// A copy of the binary that nobody may run, in a directory nobody
	// may enter (t.TempDir's are root's only).
	dir, err := os.MkdirTemp("", "bpfbench-notroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "bench.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	nobody := child.Options{Bin: bin, Dir: dir, Cred: &syscall.Credential{Uid: 65534, Gid: 65534}}

	nobody.Args = []string{"-test.list=."}
	list := startSuite(t, nobody)
	if code := list.Wait(t, childTimeout()); code != 0 {
		out, errOut := list.Output()
		t.Fatalf("-test.list as nobody: exit %d:\n%s\n%s", code, out, errOut)
	}
	names, _ := list.Output()

	nobody.Args = []string{"-test.run=.", "-test.bench=.", "-test.benchtime=1x", "-test.v"}
	c := startSuite(t, nobody)
	code := c.Wait(t, childTimeout())
	out, errOut := c.Output()
	if code != 0 {
		t.Fatalf("the run as nobody exited with %d:\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "bpfbench: "+host.ErrNotRoot.Error()+"\n"); n != 1 {
		t.Errorf("stderr says %d times that the suite needs root, want once:\n%s", n, errOut)
	}
	passed, skipped, total := 0, 0, 0
	outLines := strings.Split(out, "\n")
	for _, name := range strings.Fields(names) {
		if !strings.HasPrefix(name, "Test") && !strings.HasPrefix(name, "Benchmark") {
			continue
		}
		total++
		// With -test.v a test's output comes between "=== RUN   <name>"
		// and "--- <RESULT>: <name> (...)", a benchmark's between "<name>"
		// and "--- <RESULT>: <name>".
		result, why := "", ""
		start := -1
		for i, l := range outLines {
			l = strings.TrimSpace(l)
			if l == "=== RUN   "+name || l == name {
				start = i
			}
			if f := strings.Fields(l); start >= 0 && len(f) >= 3 && f[0] == "---" && f[2] == name {
				result = f[1]
				why = strings.TrimSpace(strings.Join(outLines[start+1:i], "\n"))
				break
			}
		}
		switch {
		case result == "PASS:" && strings.HasPrefix(name, "Test"):
			passed++
		case result == "SKIP:" && strings.Count(why, "\n") == 0 && strings.HasSuffix(why, ": "+host.ErrNotRoot.Error()):
			skipped++
		case result == "SKIP:" && name == child.HelperTest:
		default:
			t.Errorf("%s as nobody: %q %q, want a skip saying %q (or a pass, for a test)", name, result, why, host.ErrNotRoot)
		}
	}
	if passed == 0 {
		t.Errorf("no test passed as nobody; TestScenarioBadFlags needs no privilege:\n%s", out)
	}
	t.Logf("as nobody: %d of %d tests and benchmarks skipped saying the suite needs root, %d tests passed", skipped, total, passed)
	requireSameState(t, before)
}

// TestScenarioHostInterfaces runs every benchmark briefly, as CI's smoke run
// does, and checks that no host interface changed: none gained XDP, none
// appeared or went away, and the default-route device and eth0 kept their
// flags, MTU and XDP state.
func TestScenarioHostInterfaces(t *testing.T) {
	host.RequireRoot(t)
	before := takeSnapshot(t)
	devs, defRoute := hostDevices(t)
	var watched []string
	for _, i := range defRoute {
		watched = append(watched, devs[i].Name)
	}
	for _, d := range devs {
		if d.Name == "eth0" && !slices.Contains(watched, "eth0") {
			watched = append(watched, "eth0")
		}
	}
	list, stderr, err := runSuite(t, nil, "-test.list=^Benchmark")
	if err != nil {
		t.Fatalf("-test.list: %v\n%s", err, stderr)
	}
	stdout, stderr, err := runSuite(t, nil, "-test.run=^$", "-test.bench=.", "-test.benchtime=100x", "-test.v")
	if err != nil {
		// A measurement that fails its own checks under load is for the
		// smoke run (make smoke) to report; this test is about what every
		// family did to the host, so it needs only that every family ran.
		t.Logf("the smoke run failed (%v); checking the host interfaces anyway. Its failures:\n%s", err, failureLines(stdout))
	}
	for _, name := range strings.Fields(list) {
		ran := false
		for _, l := range strings.Split(stdout, "\n") {
			l = strings.TrimSpace(l)
			ran = ran || strings.HasPrefix(l, name+"/") || l == "--- SKIP: "+name || strings.HasPrefix(l, "--- FAIL: "+name)
		}
		if !ran {
			t.Errorf("%s did not run in the smoke run:\n%s\n%s", name, stdout, stderr)
		}
	}
	after, _ := hostDevices(t)
	for i, d := range devs {
		if a, ok := after[i]; !ok {
			t.Errorf("host device %s went away", d.Name)
		} else if a != d {
			t.Errorf("host device %s changed: %+v -> %+v", d.Name, d, a)
		}
	}
	for i, a := range after {
		if _, ok := devs[i]; !ok {
			t.Errorf("host device %s appeared: %+v", a.Name, a)
		}
	}
	t.Logf("host devices unchanged, including %v (default route: %v)", watched, defRoute)
	requireSameState(t, before)
}
