package child_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"bpfbench/bpf/host/syslock"
	"bpfbench/internal/child"

	"golang.org/x/sys/unix"
)

// Variables the tests pass to a child and keep from it.
const (
	envVar  = "BPFBENCH_CHILD_TEST_ENV"
	dropVar = "BPFBENCH_CHILD_TEST_DROP"
)

// mainDeathSignal is the death signal of the process's main thread, the
// one the kernel signals when the parent dies: the threads the Go runtime
// starts later have none, so the child reads it there, in TestMain, with
// the main goroutine locked to the main thread from init on.
var mainDeathSignal int

func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&mainDeathSignal)), 0, 0, 0); err != nil {
		mainDeathSignal = -1
	}
	os.Exit(m.Run())
}

// TestHelperProcess is the child of this package's tests. In mode report
// it says on its ready line what the protocol handed it, then exits with
// status 3 once its stdin is closed.
func TestHelperProcess(t *testing.T) {
	switch mode := child.Mode(); mode {
	case "":
		t.Skip("the child process of this package's tests; it tests nothing on its own")
	case "report":
		fd3, _ := os.Readlink("/proc/self/fd/3")
		child.Ready("pdeathsig="+strconv.Itoa(mainDeathSignal), "uid="+strconv.Itoa(os.Getuid()), "lockfd="+os.Getenv(syslock.FDEnv),
			"fd3="+fd3, "env="+os.Getenv(envVar), "drop="+os.Getenv(dropVar))
		io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "stdin closed")
		os.Exit(3)
	case "quick":
		child.Ready("quick")
	case "sleep":
		child.Ready()
		time.Sleep(time.Minute)
		t.Fatal("the child was not killed")
	default:
		t.Fatalf("unknown mode %q", mode)
	}
}

// fields reads the k=v fields of a ready line.
func fields(t *testing.T, rest string) map[string]string {
	t.Helper()
	m, err := child.ReadyFields(rest)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// report runs a child in mode report with o, closes its stdin once it is
// ready, and returns its ready line's fields.
func report(t *testing.T, o child.Options) map[string]string {
	t.Helper()
	o.Mode, o.Stdin = "report", true
	p := child.Start(t, o)
	ready := fields(t, p.WaitReady(t, time.Minute))
	if err := p.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	code := p.Wait(t, time.Minute)
	stdout, stderr := p.Output()
	if code != 3 || p.Err() == nil || p.Signaled() != 0 || p.Running() {
		t.Errorf("child exited with %d (%v, signal %v), want 3:\n%s\n%s", code, p.Err(), p.Signaled(), stdout, stderr)
	}
	if !strings.Contains(stdout, "\n"+child.ReadyPrefix+" pdeathsig=") || stderr != "stdin closed\n" {
		t.Errorf("the child's output is not all kept:\n%s\n%s", stdout, stderr)
	}
	return ready
}

// TestStart: the child gets the lock as descriptor 3, the environment the
// caller asks for without what the parent's run owns, and the death
// signal.
func TestStart(t *testing.T) {
	lock, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	t.Setenv(dropVar, "parent")
	t.Setenv(syslock.FDEnv, "9")

	got := report(t, child.Options{Lock: lock, Env: []string{envVar + "=child"}, Drop: []string{dropVar}})
	want := map[string]string{"pdeathsig": strconv.Itoa(int(syscall.SIGKILL)), "lockfd": "3", "fd3": lock.Name(), "env": "child", "drop": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("with a lock: the child has %s=%q, want %q", k, got[k], v)
		}
	}
	got = report(t, child.Options{})
	want = map[string]string{"lockfd": "", "env": "", "drop": "parent"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("without a lock: the child has %s=%q, want %q", k, got[k], v)
		}
	}
}

// TestStartAsNobody: a child with other credentials keeps the death signal.
func TestStartAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a child as nobody needs root: run `go test -exec sudo ./internal/child`")
	}
	// A copy of the binary nobody may run, in a directory nobody may enter
	// (t.TempDir's are root's only).
	dir, err := os.MkdirTemp("", "bpfbench-child-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "child.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	got := report(t, child.Options{Bin: bin, Dir: dir, Cred: &syscall.Credential{Uid: 65534, Gid: 65534}})
	if got["uid"] != "65534" || got["pdeathsig"] != strconv.Itoa(int(syscall.SIGKILL)) {
		t.Errorf("the child runs as uid %s with death signal %s, want 65534 and SIGKILL", got["uid"], got["pdeathsig"])
	}
}

// TestReadyThenExit: a child that printed its ready line and exited was
// ready.
func TestReadyThenExit(t *testing.T) {
	p := child.Start(t, child.Options{Mode: "quick"})
	if code := p.Wait(t, time.Minute); code != 0 {
		stdout, stderr := p.Output()
		t.Fatalf("child exited with %d:\n%s\n%s", code, stdout, stderr)
	}
	if r := p.WaitReady(t, time.Minute); r != "quick" {
		t.Errorf("ready line %q, want quick", r)
	}
}

// TestKill: Kill ends a child and reaps it, and so does the end of the test
// that started it.
func TestKill(t *testing.T) {
	p := child.Start(t, child.Options{Mode: "sleep"})
	p.WaitReady(t, time.Minute)
	if !p.Running() {
		t.Fatal("the child is not running after its ready line")
	}
	p.Kill()
	if p.Running() || p.Signaled() != syscall.SIGKILL || p.Wait(t, time.Minute) != -1 {
		t.Errorf("after Kill: running %v, signal %v, want SIGKILL", p.Running(), p.Signaled())
	}

	t.Run("cleanup", func(t *testing.T) {
		p = child.Start(t, child.Options{Mode: "sleep"})
		p.WaitReady(t, time.Minute)
	})
	if p.Running() || p.Signaled() != syscall.SIGKILL {
		t.Errorf("after the test that started it: running %v, signal %v, want SIGKILL", p.Running(), p.Signaled())
	}
}

// TestDeathSignal: a child dies with SIGKILL when the thread that started
// it ends, as the kernel does for a death signal.
func TestDeathSignal(t *testing.T) {
	cmd := child.Command(child.Options{Mode: "sleep"})
	started := make(chan error)
	go func() {
		// Locked and never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		started <- cmd.Start()
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatal("the child outlived the thread that started it by a minute")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the child ended with %v, want SIGKILL", cmd.ProcessState)
	}
}
