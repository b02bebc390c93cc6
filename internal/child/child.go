// Package child is the one way the suite's tests run their own test binary
// again as a child process: to run the suite as a user would, or to have a
// helper hold host state while the parent tests what survives it.
//
// A helper child is the test function HelperTest of the same package,
// selected by -test.run and told its mode by ModeEnv; it skips when Mode is
// "". It prints one ready line (Ready) once it holds what the parent needs,
// and the parent reads the rest of that line (WaitReady). The parent can
// hand a child the bpfbench lock it holds (Options.Lock), so that the child
// runs inside the parent's turn instead of waiting for it. A child is
// killed when its parent dies and, at the latest, at the end of the test
// that started it.
package child

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"bpfbench/bpf/host/syslock"
)

// ModeEnv names the environment variable that tells a helper child its
// mode.
const ModeEnv = "BPFBENCH_TEST_HELPER"

// HelperTest is the name of the test function a helper child runs.
const HelperTest = "TestHelperProcess"

// ReadyPrefix starts the line a helper child prints on stdout once it holds
// what the test needs of it.
const ReadyPrefix = "BPFBENCH-READY"

// Mode is the mode this process runs in as a helper child, "" when it is
// not one.
func Mode() string { return os.Getenv(ModeEnv) }

// Ready prints the ready line: ReadyPrefix, then fields, separated by
// spaces.
func Ready(fields ...string) {
	fmt.Println(strings.Join(append([]string{ReadyPrefix}, fields...), " "))
}

// ReadyFields reads the rest of a ready line made of k=v fields
// (Ready("k=v", ...)).
func ReadyFields(rest string) (map[string]string, error) {
	m := map[string]string{}
	for _, f := range strings.Fields(rest) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("bad ready line %q: %q is not k=v", rest, f)
		}
		m[k] = v
	}
	return m, nil
}

// Options say how to run the child.
type Options struct {
	// Mode, when set, makes the child a helper: it runs only HelperTest,
	// verbose, with ModeEnv=Mode. Args follow.
	Mode string
	Args []string
	// Env is added to the parent's environment, less ModeEnv,
	// syslock.FDEnv and the variables Drop names: those belong to the
	// parent's own run.
	Env  []string
	Drop []string
	// Lock, a lock file the parent holds (syslock.Lock.File), is handed to
	// the child as descriptor 3 with syslock.FDEnv=3.
	Lock *os.File
	// Stdin gives the child a stdin the test writes and closes (Proc.Stdin)
	// instead of /dev/null.
	Stdin bool
	Cred  *syscall.Credential
	Dir   string
	Bin   string // the test binary, os.Args[0] when ""
}

// Command is the child's command: its command line, environment and lock.
// The child gets SIGKILL when the thread that started it exits (the death
// signal follows the thread, go.dev/issue/27505), and the Go runtime ends
// a thread a goroutine leaves locked, as the namespace code does: Start
// keeps its own thread for the child's life, a caller that runs the
// command itself takes that risk. Credentials change before the death
// signal is set, so Cred does not clear it.
func Command(o Options) *exec.Cmd {
	bin := o.Bin
	if bin == "" {
		bin = os.Args[0]
	}
	var args []string
	if o.Mode != "" {
		// The timeout ends a helper its parent forgot.
		args = []string{"-test.run=^" + HelperTest + "$", "-test.v", "-test.timeout=5m"}
	}
	cmd := exec.Command(bin, append(args, o.Args...)...)
	drop := append([]string{ModeEnv, syslock.FDEnv}, o.Drop...)
	for _, e := range os.Environ() {
		if name, _, _ := strings.Cut(e, "="); !slices.Contains(drop, name) {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if o.Mode != "" {
		cmd.Env = append(cmd.Env, ModeEnv+"="+o.Mode)
	}
	cmd.Env = append(cmd.Env, o.Env...)
	if o.Lock != nil {
		cmd.ExtraFiles = []*os.File{o.Lock}
		cmd.Env = append(cmd.Env, syslock.FDEnv+"=3")
	}
	cmd.Dir = o.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.Cred, Pdeathsig: syscall.SIGKILL}
	// Once the child has exited, a process it started that still holds
	// its output does not hold up Wait, nor Kill, for more than this.
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// Proc is a running or exited child.
type Proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready chan struct{} // closed at the first ready line
	done  chan struct{} // closed once the child has exited and its output is in
	err   error         // of cmd.Wait, once done is closed

	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	scanned        int    // stdout up to here is whole lines looked at
	readyRest      string // the ready line after ReadyPrefix
}

// Start starts the child (Command). A cleanup kills it, by its PID, if it
// still runs at the end of the test.
func Start(t testing.TB, o Options) *Proc {
	t.Helper()
	p := &Proc{cmd: Command(o), ready: make(chan struct{}), done: make(chan struct{})}
	p.cmd.Stdout = writerFunc(p.writeStdout)
	p.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.stderr.Write(b)
	})
	if o.Stdin {
		var err error
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	started := make(chan error)
	go func() {
		// The thread that forks the child is its parent for the death
		// signal: no other goroutine may end it while the child runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", p.cmd.Path, err)
	}
	t.Cleanup(func() {
		if p.Running() {
			t.Logf("killing child pid %d, still running at the end of the test", p.PID())
			p.Kill()
		}
	})
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// writeStdout keeps what the child writes and watches it for the ready
// line.
func (p *Proc) writeStdout(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stdout.Write(b)
	for {
		rest := p.stdout.Bytes()[p.scanned:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(rest[:i])
		p.scanned += i + 1
		if r, ok := strings.CutPrefix(line, ReadyPrefix); ok && (r == "" || r[0] == ' ') && !p.isReady() {
			p.readyRest = strings.TrimSpace(r)
			close(p.ready)
		}
	}
}

func (p *Proc) isReady() bool { return closed(p.ready) }

// closed says c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// WaitReady waits for the child's ready line and returns the rest of it.
// It fails t, with what the child printed, if the child exits first or is
// not ready within timeout.
func (p *Proc) WaitReady(t testing.TB, timeout time.Duration) string {
	t.Helper()
	select {
	case <-p.ready:
	case <-p.done:
		// Its output is all in: a child that printed the line, then
		// exited, was ready.
		if !p.isReady() {
			out, errOut := p.Output()
			t.Fatalf("child pid %d exited (%v) before it was ready:\n%s\n%s", p.PID(), p.err, out, errOut)
		}
	case <-time.After(timeout):
		out, errOut := p.Output()
		t.Fatalf("child pid %d not ready after %v:\n%s\n%s", p.PID(), timeout, out, errOut)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readyRest
}

// Wait waits for the child to exit and returns its exit status, -1 if a
// signal ended it. It fails t if the child still runs after timeout.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("child pid %d still running after %v", p.PID(), timeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// Running says the child has not exited yet.
func (p *Proc) Running() bool { return !closed(p.done) }

// Err is the error of the child's exit (nil for status 0), or nil while it
// runs.
func (p *Proc) Err() error {
	if p.Running() {
		return nil
	}
	return p.err
}

// Signaled is the signal that ended the child, or 0.
func (p *Proc) Signaled() syscall.Signal {
	if p.Running() {
		return 0
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// Output is what the child has written so far.
func (p *Proc) Output() (stdout, stderr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String(), p.stderr.String()
}

// PID is the child's process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stdin is the child's stdin, nil unless Options.Stdin.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// Signal sends sig to the child.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the child if it still runs, and returns once it is reaped.
func (p *Proc) Kill() {
	if p.Running() {
		p.cmd.Process.Kill()
	}
	<-p.done
}

// RunTests runs a test binary's tests holding the system-wide lock for the
// whole run when root, as the bench package's TestMain does: the tests
// load and attach XDP programs, create namespaces and change sysctls, and a
// bench run at the same time (`go test ./...` runs packages in parallel)
// would find them sharing its dispatcher and count them in its snapshots.
// A helper child takes no lock of its own: the test that starts it hands
// it its lock (Options.Lock), or tests the lock. When lock is not nil,
// *lock is the lock the tests run under (nil where none was taken), for
// the tests that hand it to a child.
func RunTests(m *testing.M, lock **syslock.Lock) {
	if os.Geteuid() != 0 || Mode() != "" {
		os.Exit(m.Run())
	}
	l, err := syslock.Take(5 * time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests:", err)
		os.Exit(1)
	}
	if lock != nil {
		*lock = l
	}
	code := m.Run()
	l.Release()
	os.Exit(code)
}
