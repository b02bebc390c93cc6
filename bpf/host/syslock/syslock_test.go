package syslock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf/host"
	"bpfbench/bpf/host/syslock"
	"bpfbench/internal/child"
)

// testLock is the lock the tests run under, as root (child.RunTests).
var testLock *syslock.Lock

func TestMain(m *testing.M) { child.RunTests(m, &testLock) }

// held is the file of the system-wide lock the tests run under, for
// children.
func held(tb testing.TB) *os.File {
	tb.Helper()
	if testLock == nil {
		tb.Fatal("the tests hold no bpfbench lock (TestMain takes it as root)")
	}
	return testLock.File()
}

// helperTimeout bounds a wait for a helper child.
const helperTimeout = time.Minute

// helper starts this test binary as a helper child in mode, passing lock,
// and waits until it is ready; it returns the child and the rest of its
// ready line.
func helper(t *testing.T, lock *os.File, mode string, env ...string) (*child.Proc, string) {
	t.Helper()
	p := child.Start(t, child.Options{Mode: mode, Lock: lock, Env: env})
	return p, p.WaitReady(t, helperTimeout)
}

// TestHelperProcess is the child of the lock tests.
func TestHelperProcess(t *testing.T) {
	switch mode := child.Mode(); mode {
	case "":
		t.Skip("the child process of the lock tests; it tests nothing on its own")
	case "lock":
		if _, err := syslock.LockAt(os.Getenv("BPFBENCH_TEST_LOCK"), 0); err != nil {
			t.Fatal(err)
		}
		child.Ready()
	case "inherit":
		l, err := syslock.Take(0)
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
		child.Ready("inherited")
		return
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
	time.Sleep(2 * time.Minute)
	t.Fatal("helper was not stopped")
}

func TestLock(t *testing.T) {
	host.RequireRoot(t)
	path := filepath.Join(t.TempDir(), "lock")

	// Held by another process: fail after the wait, naming it.
	p, _ := helper(t, held(t), "lock", "BPFBENCH_TEST_LOCK="+path)
	pid := p.PID()
	start := time.Now()
	_, err := syslock.LockAt(path, 200*time.Millisecond)
	if err == nil {
		t.Fatal("Lock succeeded while the helper holds it")
	}
	t.Logf("%v (after %v)", err, time.Since(start))
	if !strings.Contains(err.Error(), fmt.Sprintf("held by pid %d", pid)) {
		t.Errorf("error does not name holder pid %d: %v", pid, err)
	}
	// The kernel releases the lock of a killed holder.
	p.Kill()
	l, err := syslock.LockAt(path, 5*time.Second)
	if err != nil {
		t.Fatalf("Lock after the holder died: %v", err)
	}

	// Held in this process: a second Lock waits too, then fails.
	if _, err := syslock.LockAt(path, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("held by pid %d (this process)", syslock.SelfPID)) {
		t.Errorf("second Lock: %v", err)
	}
	l.Release()
	l.Release() // idempotent
	l, err = syslock.LockAt(path, 0)
	if err != nil {
		t.Fatalf("Lock after Release: %v", err)
	}
	l.Release()
}

func TestLockSystemWide(t *testing.T) {
	host.RequireRoot(t)
	lock := held(t)
	if _, err := syslock.Take(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("held by pid %d", syslock.SelfPID)) {
		t.Errorf("second Lock while holding it: %v", err)
	}
	data, err := os.ReadFile(syslock.LockPath)
	if err != nil || !strings.HasPrefix(string(data), strconv.Itoa(syslock.SelfPID)+"\n") {
		t.Errorf("lock file says %q (%v), want our pid first", data, err)
	}
	// A child handed the lock takes it at once.
	p, r := helper(t, lock, "inherit")
	if r != "inherited" {
		t.Errorf("helper: %q", r)
	}
	if code := p.Wait(t, helperTimeout); code != 0 {
		stdout, stderr := p.Output()
		t.Errorf("helper exited with %d:\n%s\n%s", code, stdout, stderr)
	}
	// Still ours after the child's unlock.
	if _, err := syslock.Take(50 * time.Millisecond); err == nil {
		t.Error("Lock succeeded: the child's unlock released the parent's lock")
	}
}
