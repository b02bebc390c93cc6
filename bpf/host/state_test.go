package host

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"bpfbench/internal/child"
)

// Sysctls the tests change. bpf_jit_harden 0 and 1 both leave programs
// loaded by root unhardened, so toggling them disturbs no benchmark;
// printk_ratelimit_burst only affects log rate limiting.
const (
	hsHarden = "net.core.bpf_jit_harden"
	hsBurst  = "kernel.printk_ratelimit_burst"
	// hsExpedited is a tunable sysfs keeps (0 or 1): the dispatcher's
	// fillers switch with expedited grace periods.
	hsExpedited = "/sys/kernel/rcu_expedited"
)

var hsWatched = []string{hsHarden, hsBurst, "kernel.bpf_stats_enabled", hsExpedited}

// hsWatchable is hsWatched less what this kernel lacks (rcu_expedited
// needs CONFIG_TREE_RCU).
func hsWatchable(tb testing.TB) []string {
	tb.Helper()
	var names []string
	for _, name := range hsWatched {
		path, err := sysctlPath(name)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := os.Stat(path); err == nil {
			names = append(names, name)
		}
	}
	return names
}

func hsRead(tb testing.TB, name string) string {
	tb.Helper()
	path, err := sysctlPath(name)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := readSysctl(path)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// hsToggle is a value of bpf_jit_harden other than the current one, never 2.
func hsToggle(tb testing.TB) (orig, other string) {
	orig = hsRead(tb, hsHarden)
	switch orig {
	case "0":
		return orig, "1"
	case "1":
		return orig, "0"
	}
	tb.Skipf("%s is %s; the tests only toggle it between 0 and 1", hsHarden, orig)
	return
}

// hsLock is the file of the system-wide lock the tests run under
// (TestMain), so that no other bpfbench run changes the same sysctls
// meanwhile, for the children they start.
func hsLock(tb testing.TB) *os.File {
	tb.Helper()
	if testLock == nil {
		tb.Fatal("the tests hold no bpfbench lock (TestMain takes it as root)")
	}
	return testLock.File()
}

// hsSnapshot checks that the tests hold the lock, repairs what dead runs
// left, and records the watched sysctls; at the end of the test (it
// registers the first cleanup, which runs last) they must be as they
// were, and no journal of this process may be left with nothing
// outstanding.
func hsSnapshot(tb testing.TB) {
	tb.Helper()
	hsLock(tb)
	// Start from a repaired machine, as TestMain does.
	lines, err := testJournal.Repair()
	for _, l := range lines {
		tb.Log("repaired before the test: ", l)
	}
	if err != nil {
		tb.Fatal(err)
	}
	before := map[string]string{}
	watched := hsWatchable(tb)
	for _, name := range watched {
		before[name] = hsRead(tb, name)
	}
	tb.Cleanup(func() {
		for _, name := range watched {
			if got := hsRead(tb, name); got != before[name] {
				tb.Errorf("host state: %s is %s after the test, was %s", name, got, before[name])
			}
		}
		if _, err := os.Stat(journalPath(selfPID)); err == nil && !hsOutstanding() {
			tb.Errorf("host state: journal %s left with nothing outstanding", journalPath(selfPID))
		}
	})
}

func hsOutstanding() bool {
	testJournal.mu.Lock()
	defer testJournal.mu.Unlock()
	return len(testJournal.keys) > 0
}

func hsJournal(tb testing.TB, pid int) *journalFile {
	tb.Helper()
	j, err := readJournal(journalPath(pid))
	if err != nil {
		tb.Fatalf("journal of pid %d: %v", pid, err)
	}
	return j
}

func hsJournalRecord(tb testing.TB, pid int, name string) *sysctlRecord {
	tb.Helper()
	for _, r := range hsJournal(tb, pid).Sysctls {
		if r.Name == name {
			return &r
		}
	}
	return nil
}

func hsNoJournal(tb testing.TB, pid int) {
	tb.Helper()
	if _, err := os.Stat(journalPath(pid)); !errors.Is(err, os.ErrNotExist) {
		tb.Errorf("journal %s still exists (%v)", journalPath(pid), err)
	}
}

func TestSysctlSetRestore(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	orig, other := hsToggle(t)

	t.Run("set", func(t *testing.T) {
		testJournal.SetSysctl(t, hsHarden, other)
		if got := hsRead(t, hsHarden); got != other {
			t.Fatalf("%s is %s, want %s", hsHarden, got, other)
		}
		r := hsJournalRecord(t, selfPID, hsHarden)
		if r == nil || r.Old != orig || r.New != other || r.Path != "/proc/sys/net/core/bpf_jit_harden" {
			t.Fatalf("journal record %+v, want old %s new %s", r, orig, other)
		}
		j := hsJournal(t, selfPID)
		if j.StartTime == 0 || j.BootID == "" || j.PID != selfPID {
			t.Errorf("journal identity %+v", j)
		}
	})
	if got := hsRead(t, hsHarden); got != orig {
		t.Errorf("after cleanup %s is %s, want %s", hsHarden, got, orig)
	}
	hsNoJournal(t, selfPID)

	// Bad names and values fail without changing anything.
	for _, name := range []string{"", "../../etc/passwd", "net/../../x", "/sys/kernel/", "/sys/kernel/../../etc/passwd", "/sys/class/net/lo/mtu"} {
		if _, err := testJournal.ChangeSysctl(name, "1"); err == nil {
			t.Errorf("testJournal.ChangeSysctl(%q) succeeded", name)
		}
	}
	undo, err := testJournal.ChangeSysctl(hsHarden, "7")
	if err == nil || undo != nil {
		t.Errorf("testJournal.ChangeSysctl(%s, 7): %v", hsHarden, err)
	}
	if got := hsRead(t, hsHarden); got != orig {
		t.Errorf("after a failed set %s is %s, want %s", hsHarden, got, orig)
	}
	hsNoJournal(t, selfPID)
}

// TestSysfsTunable: a tunable under /sys/kernel/ is changed, journalled
// by its path and restored as a sysctl is.
func TestSysfsTunable(t *testing.T) {
	RequireRoot(t)
	if _, err := os.Stat(hsExpedited); err != nil {
		t.Skipf("no %s on this kernel: %v", hsExpedited, err)
	}
	hsSnapshot(t)
	orig := hsRead(t, hsExpedited)
	other := map[string]string{"0": "1", "1": "0"}[orig]
	if other == "" {
		t.Skipf("%s is %s; the test only toggles it between 0 and 1", hsExpedited, orig)
	}
	undo, err := testJournal.ChangeSysctl(hsExpedited, other)
	if err != nil {
		t.Fatal(err)
	}
	if got := hsRead(t, hsExpedited); got != other {
		t.Errorf("%s is %s, want %s", hsExpedited, got, other)
	}
	if r := hsJournalRecord(t, selfPID, hsExpedited); r == nil || r.Path != hsExpedited || r.Old != orig {
		t.Errorf("journal record %+v, want path %s old %s", r, hsExpedited, orig)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if got := hsRead(t, hsExpedited); got != orig {
		t.Errorf("after undo %s is %s, want %s", hsExpedited, got, orig)
	}
	hsNoJournal(t, selfPID)
}

func TestSysctlStack(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	v0 := hsRead(t, hsBurst)
	n, err := strconv.Atoi(v0)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := strconv.Itoa(n+1), strconv.Itoa(n+2)

	t.Run("outer", func(t *testing.T) {
		testJournal.SetSysctl(t, hsBurst, v1)
		t.Run("inner", func(t *testing.T) {
			testJournal.SetSysctl(t, strings.ReplaceAll(hsBurst, ".", "/"), v2) // same sysctl, other spelling
			if got := hsRead(t, hsBurst); got != v2 {
				t.Fatalf("%s is %s, want %s", hsBurst, got, v2)
			}
			j := hsJournal(t, selfPID)
			if len(j.Sysctls) != 1 || j.Sysctls[0].Old != v0 || j.Sysctls[0].New != v2 {
				t.Fatalf("journal %+v: want one record, old %s new %s", j.Sysctls, v0, v2)
			}
		})
		if got := hsRead(t, hsBurst); got != v1 {
			t.Errorf("after the inner cleanup %s is %s, want %s", hsBurst, got, v1)
		}
		if r := hsJournalRecord(t, selfPID, hsBurst); r == nil || r.Old != v0 {
			t.Errorf("journal record %+v, want old %s", r, v0)
		}
	})
	if got := hsRead(t, hsBurst); got != v0 {
		t.Errorf("after the outer cleanup %s is %s, want %s", hsBurst, got, v0)
	}
	hsNoJournal(t, selfPID)

	// Undone out of order (as parallel subtests may), the end is the same.
	undo1, err := testJournal.ChangeSysctl(hsBurst, v1)
	if err != nil {
		undo1()
		t.Fatal(err)
	}
	undo2, err := testJournal.ChangeSysctl(hsBurst, v2)
	if err != nil {
		undo2()
		undo1()
		t.Fatal(err)
	}
	if err := undo1(); err != nil {
		t.Error(err)
	}
	if got := hsRead(t, hsBurst); got != v2 {
		t.Errorf("undoing the older change wrote %s; want %s kept until the newer is undone", got, v2)
	}
	if err := undo2(); err != nil {
		t.Error(err)
	}
	if err := undo2(); err != nil {
		t.Errorf("second undo: %v", err)
	}
	if got := hsRead(t, hsBurst); got != v0 {
		t.Errorf("after both undos %s is %s, want %s", hsBurst, got, v0)
	}
	hsNoJournal(t, selfPID)
}

func TestStateRestoreAll(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	orig, other := hsToggle(t)
	v0 := hsRead(t, hsBurst)

	t.Run("restore", func(t *testing.T) {
		testJournal.SetSysctl(t, hsHarden, other)
		testJournal.SetSysctl(t, hsBurst, v0+"1")
		ns := NewNetns(t)
		if _, err := ns.AddVeth(2, 1); err != nil {
			t.Fatal(err)
		}
		j := hsJournal(t, selfPID)
		if len(j.Sysctls) != 2 {
			t.Fatalf("journal %+v", j)
		}
		if err := testJournal.RestoreAll(); err != nil {
			t.Fatal(err)
		}
		if got := hsRead(t, hsHarden); got != orig {
			t.Errorf("%s is %s after RestoreAll, want %s", hsHarden, got, orig)
		}
		if got := hsRead(t, hsBurst); got != v0 {
			t.Errorf("%s is %s after RestoreAll, want %s", hsBurst, got, v0)
		}
		hsNoJournal(t, selfPID)
		if err := testJournal.RestoreAll(); err != nil {
			t.Errorf("second RestoreAll: %v", err)
		}
		// The cleanups that follow find nothing to do (and report no error).
	})
}

// hsTimeout bounds a wait for a helper child.
const hsTimeout = time.Minute

// hsHelper starts this test binary as a helper child in mode, passing the
// lock this test holds, and waits until it is ready; it returns the child
// and the rest of its ready line.
func hsHelper(t *testing.T, lock *os.File, mode string, env ...string) (*child.Proc, string) {
	t.Helper()
	p := child.Start(t, child.Options{Mode: mode, Lock: lock, Env: env})
	// Whatever happens, the child is gone and what it left is repaired
	// before the test's host-state check.
	t.Cleanup(func() {
		p.Kill()
		if lines, err := testJournal.Repair(); err != nil || len(lines) > 0 {
			t.Logf("cleanup repair: %q %v", lines, err)
		}
	})
	return p, p.WaitReady(t, hsTimeout)
}

// TestHelperProcess is the child of the SIGKILL, SIGINT and panic tests.
func TestHelperProcess(t *testing.T) {
	switch mode := child.Mode(); mode {
	case "":
		t.Skip("the child process of the state tests; it tests nothing on its own")
	case "state", "signal", "panic":
		if mode == "signal" {
			testJournal.RestoreOnSignal()
		}
		testJournal.SetSysctl(t, hsHarden, os.Getenv("BPFBENCH_TEST_VALUE"))
		ns := NewNetns(t)
		if _, err := ns.AddVeth(2, 1); err != nil {
			t.Fatal(err)
		}
		child.Ready(ns.Name)
		if mode == "panic" {
			time.Sleep(100 * time.Millisecond)
			panic("helper panics")
		}
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
	time.Sleep(2 * time.Minute)
	t.Fatal("helper was not stopped")
}

func TestStateSIGKILL(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	lock := hsLock(t)
	orig, other := hsToggle(t)

	p, nsName := hsHelper(t, lock, "state", "BPFBENCH_TEST_VALUE="+other)
	pid := p.PID()
	if got := hsRead(t, hsHarden); got != other {
		t.Fatalf("helper did not set %s: it is %s", hsHarden, got)
	}
	if r := hsJournalRecord(t, pid, hsHarden); r == nil || r.Old != orig {
		t.Fatalf("helper journal record %+v, want old %s", r, orig)
	}
	// The helper's namespace is held by the helper, and by nothing once it
	// is killed.
	if held := hsHolders(t, nsName); len(held) == 0 || !strings.Contains(held[0], fmt.Sprintf("of pid %d", pid)) {
		t.Fatalf("the live helper's namespace %s is held by %v, want the helper (pid %d)", nsName, held, pid)
	}
	// A live run is left alone.
	lines, err := testJournal.Repair()
	if err != nil || len(lines) > 0 {
		t.Fatalf("Repair with the helper alive: %q, %v", lines, err)
	}

	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.Wait(t, hsTimeout)
	if got := hsRead(t, hsHarden); got != other {
		t.Fatalf("after SIGKILL %s is %s: expected the change to survive", hsHarden, got)
	}
	// The sysctl is all a killed run leaves: its namespace died with it.
	hsGone(t, nsName)

	lines, err = testJournal.Repair()
	for _, l := range lines {
		t.Log("repair: ", l)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := hsRead(t, hsHarden); got != orig {
		t.Errorf("after Repair %s is %s, want %s", hsHarden, got, orig)
	}
	hsNoJournal(t, pid)
	if want := fmt.Sprintf("restored %s=%s left as %s by killed run pid %d", hsHarden, orig, other, pid); len(lines) != 1 || lines[0] != want {
		t.Errorf("Repair lines %q, want only %q", lines, want)
	}
}

func TestStateSIGINT(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	lock := hsLock(t)
	orig, other := hsToggle(t)

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p, nsName := hsHelper(t, lock, "signal", "BPFBENCH_TEST_VALUE="+other)
			pid := p.PID()
			if got := hsRead(t, hsHarden); got != other {
				t.Fatalf("helper did not set %s: it is %s", hsHarden, got)
			}
			if err := p.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := p.Wait(t, hsTimeout); code != 128+int(sig) {
				t.Errorf("helper exit: %v, want status %d", p.Err(), 128+int(sig))
			}
			_, stderr := p.Output()
			t.Logf("helper stderr:\n%s", stderr)
			if got := hsRead(t, hsHarden); got != orig {
				t.Errorf("after %v %s is %s, want %s", sig, hsHarden, got, orig)
			}
			hsGone(t, nsName)
			hsNoJournal(t, pid)
			if want := fmt.Sprintf("restored %s=%s (was %s)", hsHarden, orig, other); !strings.Contains(stderr, want) {
				t.Errorf("helper stderr lacks %q", want)
			}
		})
	}
}

// TestStatePanic: a test that panics still runs its cleanups.
func TestStatePanic(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	lock := hsLock(t)
	orig, other := hsToggle(t)

	p, nsName := hsHelper(t, lock, "panic", "BPFBENCH_TEST_VALUE="+other)
	if p.Wait(t, hsTimeout) == 0 {
		t.Errorf("panicking helper exited 0")
	}
	if _, stderr := p.Output(); !strings.Contains(stderr, "helper panics") {
		t.Errorf("helper stderr:\n%s", stderr)
	}
	if got := hsRead(t, hsHarden); got != orig {
		t.Errorf("after the panic %s is %s, want %s", hsHarden, got, orig)
	}
	hsGone(t, nsName)
	hsNoJournal(t, p.PID())
}
