package bench

// What the scenario tests need around their children (internal/child): the
// suite run as a child, the suite lock, the journal of host-state changes
// the children write (stateWatch), and the host's own devices.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"bpfbench/bpf/host"
	"bpfbench/bpf/host/snapshot"
	"bpfbench/bpf/host/syslock"
	"bpfbench/internal/child"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// scenarioHold is the mode (child.ModeEnv) in which TestHelperProcess, in
// a child a scenario test starts, changes host state and holds it.
const scenarioHold = "hold"

// heldSysctl is the sysctl the helper changes, to 1 (to 0 if it is 1):
// bpf_jit_harden 0 and 1 both leave programs loaded by root unhardened.
const heldSysctl = "net.core.bpf_jit_harden"

// xdpQuick is a benchmark run of a second or two.
var xdpQuick = []string{"-test.run=^$", "-test.bench=^BenchmarkXDP$/^prog=drop$/^size=64$", "-test.benchtime=100x"}

// suiteOptions are o for a run of the suite as a child: the fault point this
// process was told (failEnv) is its own, never the child's.
func suiteOptions(o child.Options) child.Options {
	o.Drop = append(slices.Clone(o.Drop), failEnv)
	return o
}

// startSuite starts the suite as a child (child.Start).
func startSuite(t *testing.T, o child.Options) *child.Proc {
	t.Helper()
	return child.Start(t, suiteOptions(o))
}

// childTimeout bounds a wait for a child that may first wait for the lock.
func childTimeout() time.Duration { return *flagLockWait + 2*time.Minute }

// namespacesOf lists the network namespaces process pid holds by a
// descriptor (host.Netns), by their kernel names, net:[<inode>].
func namespacesOf(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	var names []string
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err == nil && strings.HasPrefix(l, "net:[") && l != own && !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	return names
}

// requireGone fails t unless nothing holds any of the namespaces names
// (snapshot.NetnsHolders), waiting a little for an exited process to be
// reaped: a run's namespaces die with it.
func requireGone(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		held, err := snapshot.NetnsGone(n, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(held) > 0 {
			t.Errorf("namespace %s is still held: %v", n, held)
		}
	}
}

// parseReady reads the k=v fields of the hold helper's ready line (the
// rest of it, after child.ReadyPrefix).
func parseReady(t *testing.T, rest string) map[string]string {
	t.Helper()
	m, err := child.ReadyFields(rest)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"value", "was", "netns"} {
		if m[k] == "" {
			t.Fatalf("ready line %q lacks %s", rest, k)
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
	if suiteLock == nil {
		t.Fatal("this process holds no bpfbench lock to release")
	}
	suiteLock.Release()
	defer func() {
		lock, err := syslock.Take(*flagLockWait)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bpfbench: %s cannot take back the lock it released: %v; stopping, as the remaining tests must not run without it\n", t.Name(), err)
			os.Exit(1)
		}
		suiteLock = lock
	}()
	fn()
}

// stateWatch records, through inotify, every file created, renamed into or
// deleted from the journal directory, in the order the kernel saw them:
// which runs changed the host state that outlives them, and when.
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
	// /run too: a run that found no journal directory would create it.
	for _, dir := range []string{host.StateDir, filepath.Dir(host.StateDir)} {
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
			if dir == filepath.Dir(host.StateDir) && name != filepath.Base(host.StateDir) {
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
// journal. first is the index of the first in events, or -1.
func (w *stateWatch) byPID(t *testing.T, pid int) (evs []string, first int) {
	t.Helper()
	first = -1
	for i, e := range w.read(t) {
		name := filepath.Base(e)
		switch {
		case strings.HasPrefix(name, fmt.Sprintf("journal-%d.", pid)),
			name == "bpfbench": // the directory created
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
