package bench

// The child-process harness of the scenario tests: a run of the suite as a
// child (suiteChild), the suite lock, the journal of host-state changes the
// children write (stateWatch), and the host's own devices.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"bpfbench/bpf/host"
	"bpfbench/bpf/host/syslock"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// scenarioEnv makes TestScenarioHelper, in a child a scenario test starts,
// change host state and hold it: scenarioHold.
const scenarioEnv = "BPFBENCH_SCENARIO"

const scenarioHold = "hold"

// heldSysctl is the sysctl the helper changes, to 1 (to 0 if it is 1):
// bpf_jit_harden 0 and 1 both leave programs loaded by root unhardened.
const heldSysctl = "net.core.bpf_jit_harden"

// xdpQuick is a benchmark run of a second or two.
var xdpQuick = []string{"-test.run=^$", "-test.bench=^BenchmarkXDP$/^prog=drop$/^size=64$", "-test.benchtime=100x"}

// suiteChild is a run of the suite a scenario test started.
type suiteChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready chan string // the READY line of TestScenarioHelper
	done  chan struct{}
	err   error // of Wait, once done is closed

	mu        sync.Mutex
	out, err2 bytes.Buffer
}

type suiteChildOpts struct {
	env   []string
	lock  bool // hand over the lock this process holds, as runSuite does
	stdin bool // give the child a stdin the test closes (TestScenarioHelper)
	cred  *syscall.Credential
	dir   string
	bin   string // default os.Args[0]
}

// lockedWriter appends to a buffer under the child's mutex.
type lockedWriter struct {
	c *suiteChild
	b *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.b.Write(p)
}

// startChild starts the test binary with args. A cleanup kills it, by its
// PID, if the test ends while it still runs.
func startChild(t *testing.T, o suiteChildOpts, args ...string) *suiteChild {
	t.Helper()
	c := &suiteChild{ready: make(chan string, 1), done: make(chan struct{})}
	c.cmd = suiteCmd(o.bin, o.env, o.lock, args...)
	c.cmd.Dir = o.dir
	if o.cred != nil {
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred}
	}
	var err error
	if o.stdin {
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = lockedWriter{c, &c.err2}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.cmd.Path, err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			line := s.Text()
			lockedWriter{c, &c.out}.Write([]byte(line + "\n"))
			if strings.HasPrefix(line, "READY ") {
				select {
				case c.ready <- line:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			t.Logf("killing child pid %d, still running at the end of the test", c.pid())
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

func (c *suiteChild) pid() int { return c.cmd.Process.Pid }

func (c *suiteChild) output() (stdout, stderr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String(), c.err2.String()
}

func (c *suiteChild) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// childTimeout bounds a wait for a child that may first wait for the lock.
func childTimeout() time.Duration { return *flagLockWait + 2*time.Minute }

// waitReady returns the child's READY line.
func (c *suiteChild) waitReady(t *testing.T) string {
	t.Helper()
	select {
	case line := <-c.ready:
		return line
	case <-c.done:
		out, errOut := c.output()
		t.Fatalf("child pid %d exited (%v) before it was ready:\n%s\n%s", c.pid(), c.err, out, errOut)
	case <-time.After(childTimeout()):
		t.Fatalf("child pid %d not ready after %v", c.pid(), childTimeout())
	}
	return ""
}

// wait waits for the child to exit and returns its exit status, -1 if a
// signal ended it.
func (c *suiteChild) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(childTimeout()):
		t.Fatalf("child pid %d still running after %v", c.pid(), childTimeout())
	}
	return c.cmd.ProcessState.ExitCode()
}

// signaled is the signal that ended the child, or 0.
func (c *suiteChild) signaled() syscall.Signal {
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// namespacesOf lists the namespaces of process pid in /run/netns.
func namespacesOf(t *testing.T, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir(host.NetnsDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("%s%d-", host.NetnsPrefix, pid)) {
			names = append(names, e.Name())
		}
	}
	return names
}

// parseReady reads "READY k=v k=v ...".
func parseReady(t *testing.T, line string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, "READY ")) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("bad READY line %q", line)
		}
		m[k] = v
	}
	for _, k := range []string{"value", "was", "netns"} {
		if m[k] == "" {
			t.Fatalf("READY line %q lacks %s", line, k)
		}
	}
	return m
}

// withoutSuiteLock runs fn without the lock TestMain holds, so that the
// runs fn starts compete for it as separate runs do, and takes the lock
// back afterwards, waiting -bpfbench.lockwait. Other bpfbench runs on the
// machine may take their turn meanwhile. If the lock cannot be taken back
// the process exits: the remaining tests must not run without it.
func withoutSuiteLock(t *testing.T, fn func()) {
	t.Helper()
	if os.Getenv(syslock.FDEnv) != "" {
		t.Skipf("this run holds a lock its parent passed it (%s): releasing it would not free it", syslock.FDEnv)
	}
	if syslock.HeldFile() == nil {
		t.Fatal("this process holds no bpfbench lock to release")
	}
	suiteUnlock()
	suiteUnlock = func() {}
	defer func() {
		unlock, err := syslock.Take(*flagLockWait)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bpfbench: %s cannot take back the lock it released: %v; stopping, as the remaining tests must not run without it\n", t.Name(), err)
			os.Exit(1)
		}
		suiteUnlock = unlock
	}()
	fn()
}

// stateWatch records, through inotify, every file created, renamed into or
// deleted from /run/netns and the journal directory, in the order the
// kernel saw them: which runs changed host state, and when.
type stateWatch struct {
	fd     int
	dirs   map[int32]string
	events []string // "create <dir>/<name>" or "delete <dir>/<name>"
}

func watchState(t *testing.T) *stateWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	w := &stateWatch{fd: fd, dirs: map[int32]string{}}
	t.Cleanup(func() { unix.Close(fd) })
	// /run too: a run that found neither directory would create it.
	for _, dir := range []string{host.NetnsDir, host.StateDir, filepath.Dir(host.StateDir)} {
		wd, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatalf("watch %s: %v", dir, err)
		}
		w.dirs[int32(wd)] = dir
	}
	return w
}

// read collects the events queued so far.
func (w *stateWatch) read(t *testing.T) []string {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err == unix.EAGAIN {
			return w.events
		}
		if err != nil {
			t.Fatalf("read inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflowed: events lost")
			}
			dir := w.dirs[ev.Wd]
			if dir == "" {
				continue
			}
			if dir == filepath.Dir(host.StateDir) && name != filepath.Base(host.NetnsDir) && name != filepath.Base(host.StateDir) {
				continue // the rest of /run is not ours
			}
			what := "create"
			if ev.Mask&unix.IN_DELETE != 0 {
				what = "delete"
			}
			w.events = append(w.events, what+" "+filepath.Join(dir, name))
		}
	}
}

// byPID are the events about files process pid names as its own: its
// namespaces and journal. first is the index of the first in events, or -1.
func (w *stateWatch) byPID(t *testing.T, pid int) (evs []string, first int) {
	t.Helper()
	first = -1
	for i, e := range w.read(t) {
		name := filepath.Base(e)
		switch {
		case strings.HasPrefix(name, fmt.Sprintf("%s%d-", host.NetnsPrefix, pid)),
			strings.HasPrefix(name, fmt.Sprintf("journal-%d.", pid)),
			name == "bpfbench" || name == "netns": // a directory created
			if first < 0 {
				first = i
			}
			evs = append(evs, e)
		}
	}
	return evs, first
}

// lockFileOpen reports whether process pid has the lock file open:
// syslock.Take keeps it open while it waits.
func lockFileOpen(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == filepath.Join(host.StateDir, "lock") {
			return true
		}
	}
	return false
}

// failureLines are the "--- FAIL" lines of go test output and the messages
// under them.
func failureLines(out string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "--- FAIL"):
			in = true
		case in && strings.HasPrefix(l, "    ") && !strings.HasPrefix(t, "---"):
		default:
			in = false
		}
		if in {
			b.WriteString(t + "\n")
		}
	}
	return b.String()
}

// hostDev is what the suite must never change about a host interface.
type hostDev struct {
	Name        string
	Flags       uint32 // administrative: IFF_RUNNING, LOWER_UP and DORMANT left out
	MTU         int
	Promisc     int
	XDPProgID   uint32
	XDPAttached bool
	Master      int
}

func hostDevices(t *testing.T) (devs map[int]hostDev, defaultRoute []int) {
	t.Helper()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	devs = map[int]hostDev{}
	for _, l := range links {
		a := l.Attrs()
		d := hostDev{Name: a.Name, Flags: a.RawFlags &^ (unix.IFF_RUNNING | unix.IFF_LOWER_UP | unix.IFF_DORMANT),
			MTU: a.MTU, Promisc: a.Promisc, Master: a.MasterIndex}
		if a.Xdp != nil {
			d.XDPAttached, d.XDPProgID = a.Xdp.Attached, a.Xdp.ProgId
		}
		devs[a.Index] = d
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask) {
			if r.LinkIndex > 0 && !slices.Contains(defaultRoute, r.LinkIndex) {
				defaultRoute = append(defaultRoute, r.LinkIndex)
			}
		}
	}
	return devs, defaultRoute
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

// currentSysctl is the value of sysctl name now.
func currentSysctl(tb testing.TB, name string) string {
	tb.Helper()
	v, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}
