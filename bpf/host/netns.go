package host

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// threadNetns is the network namespace file of the calling OS thread.
const threadNetns = "/proc/thread-self/ns/net"

// Netns is a private network namespace the suite created with NewNetns or
// CreateNetns.
//
// Nothing names it in the file system: this process holds it by a file
// descriptor (and its netlink handle's sockets), as cilium/ebpf's test
// helpers do, so it dies with the process however the process ends, and
// with it every interface in it, veth pairs included. No run leaves one
// behind for a later run to repair (docs/safety.md#what-a-killed-run-leaves).
//
// Closing it releases what this package holds on it; the kernel then
// destroys it once nothing else refers to it. Things callers create are
// theirs to release: a process or open socket inside it keeps it alive,
// and a BPF XDP link attached to one of its interfaces survives it as a
// detached link until its file descriptor is closed. Register such
// cleanups after NewNetns, so that they run first (tb.Cleanup is LIFO).
type Netns struct {
	// Name is the kernel's name of the namespace, net:[<inode>], as
	// /proc/<pid>/ns/net and lsns show it.
	Name string
	// Inode identifies the namespace: it is the inode number of
	// /proc/<pid>/ns/net of every thread inside it.
	Inode uint64

	mu     sync.RWMutex // guards the fields below against Close
	fd     int          // the namespace, open; -1 once closed
	handle *netlink.Handle
	nveth  int // veth pairs made so far, for names
}

// NewNetns creates a network namespace held by this process, brings its
// lo up and registers tb.Cleanup to close it.
func NewNetns(tb testing.TB) *Netns {
	tb.Helper()
	ns, err := CreateNetns()
	if err != nil {
		tb.Fatalf("host: create network namespace: %v", err)
	}
	tb.Cleanup(func() {
		if err := ns.Close(); err != nil {
			tb.Errorf("host: close network namespace %s: %v", ns.Name, err)
		}
	})
	return ns
}

// CreateNetns is NewNetns for what is not a test: the caller closes the
// namespace with Close. Creating it switches one locked OS thread into the
// new namespace and back; neither the caller's thread nor any other is
// left in it.
func CreateNetns() (*Netns, error) {
	ns := &Netns{fd: -1}
	err := ns.create()
	if err == nil {
		err = ns.loUp()
	}
	if err == nil {
		err = ns.quietIPv6()
	}
	if err != nil {
		return nil, errors.Join(err, ns.Close())
	}
	return ns, nil
}

// create makes the namespace. It runs on a goroutine of its own, locked to
// its OS thread; the thread goes back to its namespace afterwards, and if
// that should fail the goroutine exits still locked, so the Go runtime
// destroys the thread instead of reusing it.
func (ns *Netns) create() error {
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		r := result{fd: -1}
		defer func() { done <- r }()
		orig, err := unix.Open(threadNetns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			r.err = fmt.Errorf("open %s: %w", threadNetns, err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			r.err = fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
			return
		}
		r.fd, err = unix.Open(threadNetns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			r.err = fmt.Errorf("open new namespace: %w", err)
		}
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Stay locked: the thread dies with this goroutine.
			r.err = errors.Join(r.err, fmt.Errorf("return thread to its network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
	}()
	r := <-done
	ns.fd = r.fd
	if r.err != nil {
		return r.err
	}
	var st unix.Stat_t
	if err := unix.Fstat(ns.fd, &st); err != nil {
		return err
	}
	ns.Inode = st.Ino
	ns.Name = fmt.Sprintf("net:[%d]", st.Ino)
	return nil
}

// quietIPv6 turns IPv6 off for devices created later in the namespace.
// Otherwise every veth that comes up sends router solicitations, DAD and
// MLD reports for a few seconds, and their softirq work lands in whatever
// thread is being measured on that CPU.
func (ns *Netns) quietIPv6() error {
	return ns.Do(func() error {
		// /proc/sys/net resolves to the namespace of the thread that opens it.
		for _, conf := range []string{"all", "default"} {
			p := "/proc/sys/net/ipv6/conf/" + conf + "/disable_ipv6"
			if err := os.WriteFile(p, []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("disable IPv6 in %s: %w", ns.Name, err)
			}
		}
		return nil
	})
}

func (ns *Netns) loUp() error {
	h, err := ns.Handle()
	if err != nil {
		return err
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo in %s: %w", ns.Name, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up in %s: %w", ns.Name, err)
	}
	return nil
}

// Path is a file other processes open to enter the namespace while this
// process holds it (nsenter --net=PATH, -bpfbench.iface-netns=PATH):
// its descriptor under /proc.
func (ns *Netns) Path() string {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	return fmt.Sprintf("/proc/%d/fd/%d", selfPID, ns.fd)
}

// Close releases the namespace now rather than at cleanup: its
// descriptor and netlink handle. It is safe to call more than once.
func (ns *Netns) Close() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.handle != nil {
		ns.handle.Close()
		ns.handle = nil
	}
	if ns.fd < 0 {
		return nil
	}
	err := unix.Close(ns.fd)
	ns.fd = -1
	return err
}

// Do runs fn on the calling goroutine, locked to its OS thread, with the
// thread switched into the namespace, then switches the thread back and
// unlocks it. Kernel calls that take an ifindex, such as creating a BPF XDP
// link, resolve it in the calling thread's namespace, so they belong in fn.
//
// Only the calling goroutine is in the namespace: goroutines fn starts run
// elsewhere. fn may panic or call t.FailNow; the thread still goes back. If
// it cannot go back (it has never been seen to fail), Do panics and leaves
// the thread locked, so the Go runtime destroys it instead of reusing it.
func (ns *Netns) Do(fn func() error) error {
	return inNetns(ns.Name, func() (int, func(), error) {
		ns.mu.RLock()
		if ns.fd < 0 {
			ns.mu.RUnlock()
			return -1, nil, fmt.Errorf("network namespace %s is closed", ns.Name)
		}
		return ns.fd, ns.mu.RUnlock, nil
	}, fn)
}

// DoIn runs fn as Netns.Do does, in the network namespace at path (a file
// under /run/netns, or any namespace file): a namespace the suite did not
// create, such as the one of a user-named device.
func DoIn(path string, fn func() error) error {
	return inNetns(path, func() (int, func(), error) {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, nil, fmt.Errorf("open network namespace %s: %w", path, err)
		}
		return fd, func() { unix.Close(fd) }, nil
	}, fn)
}

// inNetns switches the calling goroutine's locked thread into the
// namespace open returns (a file descriptor and what releases it once the
// thread is in), runs fn, and switches the thread back.
func inNetns(name string, open func() (int, func(), error), fn func() error) error {
	runtime.LockOSThread()
	orig, err := unix.Open(threadNetns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open %s: %w", threadNetns, err)
	}
	fd, release, err := open()
	if err == nil {
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		release()
		if err != nil {
			err = fmt.Errorf("enter network namespace %s: %w", name, err)
		}
	}
	if err != nil {
		unix.Close(orig)
		runtime.UnlockOSThread()
		return err
	}
	defer func() {
		err := unix.Setns(orig, unix.CLONE_NEWNET)
		unix.Close(orig)
		if err != nil {
			panic(fmt.Sprintf("host: cannot return thread from network namespace %s: %v", name, err))
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// Handle returns a netlink handle whose sockets live in the namespace, for
// configuring it without switching threads. The namespace owns it and closes
// it on Close. It has a socket for NETLINK_ROUTE only: netlink calls
// needing another family would quietly run in the caller's namespace, so
// don't make them through it. (netlink.NewHandle's default also opens
// NETLINK_XFRM and NETLINK_NETFILTER sockets, which fail with
// EPROTONOSUPPORT where xfrm_user and nfnetlink are modules nobody loaded,
// as in a minimal guest of tools/vmexec.)
func (ns *Netns) Handle() (*netlink.Handle, error) {
	ns.mu.Lock()
	if ns.handle != nil {
		h := ns.handle
		ns.mu.Unlock()
		return h, nil
	}
	ns.mu.Unlock()
	// The sockets are opened by a thread inside the namespace (Do checks
	// that the thread comes back), then used from anywhere.
	var h *netlink.Handle
	err := ns.Do(func() error {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", ns.Name, err)
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.fd < 0 {
		h.Close()
		return nil, fmt.Errorf("network namespace %s is closed", ns.Name)
	}
	if ns.handle != nil { // lost a race
		h.Close()
		return ns.handle, nil
	}
	ns.handle = h
	return h, nil
}
