package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces live, as for `ip netns`.
const NetnsDir = "/run/netns"

// NetnsPrefix starts the name of every namespace the suite creates; the full
// name is bpfbench-<pid>-<seq>, which is how Repair finds the namespaces of
// dead runs.
const NetnsPrefix = "bpfbench-"

// threadNetns is the network namespace file of the calling OS thread.
const threadNetns = "/proc/thread-self/ns/net"

// Netns is a private network namespace the suite created with NewNetns.
//
// It is a named namespace in the sense of iproute2: a bind mount of the
// namespace on /run/netns/<Name>, so `ip netns list` shows it and
// `ip -n <Name> link` looks inside it.
//
// Deleting it (its tb.Cleanup, Close or RestoreAll) unmounts and removes that
// file and closes every file descriptor and netlink socket this package holds
// on it; the kernel then destroys the namespace, and every interface in it
// (veth pairs included), once nothing else refers to it. Things callers create
// are theirs to release: a process or open socket inside it keeps it alive,
// and a BPF XDP link attached to one of its interfaces survives the deletion
// as a detached link until its file descriptor is closed. Register such
// cleanups after NewNetns, so that they run first (tb.Cleanup is LIFO).
type Netns struct {
	// Name is bpfbench-<pid>-<seq>.
	Name string
	// Path is /run/netns/<Name>.
	Path string
	// Inode identifies the namespace: it is the inode number of
	// /proc/<pid>/ns/net of every thread inside it.
	Inode uint64

	created time.Time // for the journal

	mu      sync.RWMutex // guards the fields below against Close
	fd      int          // the namespace, open; -1 once closed
	handle  *netlink.Handle
	nveth   int  // veth pairs made so far, for names
	mounted bool // Path is a bind mount of the namespace
	file    bool // Path exists
	deleted bool
}

// NewNetns creates a named network namespace bpfbench-<pid>-<seq>, brings its
// lo up and registers tb.Cleanup to delete it.
//
// The namespace is recorded in this process's journal before it is created,
// so Repair deletes it should the process die without deleting it. Creating
// it switches one locked OS thread into the new namespace and back; neither
// the caller's thread nor any other is left in it.
func NewNetns(tb testing.TB) *Netns {
	tb.Helper()
	ns, err := CreateNetns()
	if err != nil {
		tb.Fatalf("host: create network namespace: %v", err)
	}
	tb.Cleanup(func() {
		if err := ns.Close(); err != nil {
			tb.Errorf("host: delete network namespace %s: %v", ns.Name, err)
		}
	})
	return ns
}

// CreateNetns is NewNetns for what outlives no test but is not one: the
// caller deletes the namespace with Close.
func CreateNetns() (*Netns, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.frozen {
		return nil, errFrozen
	}
	if err := ensureNetnsDir(); err != nil {
		return nil, err
	}
	// A leftover of an earlier process that had our PID may hold a name;
	// skip it (Repair deletes it).
	var ns *Netns
	for {
		name := fmt.Sprintf("%s%d-%d", NetnsPrefix, selfPID, st.nsSeq)
		st.nsSeq++
		path := filepath.Join(NetnsDir, name)
		if _, err := os.Lstat(path); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		ns = &Netns{Name: name, Path: path, fd: -1, created: time.Now()}
		break
	}

	// Journal first, create second: a crash in between leaves a record of
	// something that does not exist, which Repair ignores.
	st.namespaces = append(st.namespaces, ns)
	if err := syncJournalLocked(); err != nil {
		st.namespaces = st.namespaces[:len(st.namespaces)-1]
		return nil, err
	}
	err := ns.create()
	if err == nil {
		err = ns.loUp()
	}
	if err == nil {
		err = ns.quietIPv6()
	}
	if err != nil {
		if derr := ns.destroy(); derr != nil {
			// Leave it in the journal for RestoreAll or Repair.
			return nil, errors.Join(err, derr)
		}
		removeNetnsLocked(ns)
		return nil, errors.Join(err, syncJournalLocked())
	}
	return ns, nil
}

// ensureNetnsDir makes /run/netns a shared mount point, as `ip netns add`
// does, so that namespaces mounted in it are also visible to, and deletable
// from, other mount namespaces and so that later `ip netns add` calls don't
// bind-mount the directory over our mounts. Like iproute2 it leaves the
// directory mounted.
func ensureNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return err
	}
	bound := false
	for {
		err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("make %s a shared mount: %w", NetnsDir, err)
		}
		// Not a mount point yet.
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount %s on itself: %w", NetnsDir, err)
		}
		bound = true
	}
}

// create makes the namespace and its bind mount. It runs on a goroutine of
// its own, locked to its OS thread; the thread goes back to its namespace
// afterwards, and if that should fail the goroutine exits still locked, so
// the Go runtime destroys the thread instead of reusing it.
func (ns *Netns) create() error {
	f, err := os.OpenFile(ns.Path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
	if err != nil {
		return err
	}
	f.Close()
	ns.file = true

	type result struct {
		fd    int
		mount bool
		err   error
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
		if err := unix.Mount(threadNetns, ns.Path, "none", unix.MS_BIND, ""); err != nil {
			r.err = fmt.Errorf("bind mount new namespace on %s: %w", ns.Path, err)
		} else {
			r.mount = true
			r.fd, err = unix.Open(threadNetns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				r.err = fmt.Errorf("open new namespace: %w", err)
			}
		}
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			// Stay locked: the thread dies with this goroutine.
			r.err = errors.Join(r.err, fmt.Errorf("return thread to its network namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
	}()
	r := <-done
	ns.mounted = r.mount
	ns.fd = r.fd
	if r.err != nil {
		return r.err
	}
	ino, err := fdInode(ns.fd)
	if err != nil {
		return err
	}
	ns.Inode = ino
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

// Close deletes the namespace now rather than at cleanup. It is safe to call
// more than once.
func (ns *Netns) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return closeNetnsLocked(ns)
}

// closeNetnsLocked deletes ns and drops it from the journal; st.mu is held.
func closeNetnsLocked(ns *Netns) error {
	if ns.deleted {
		return nil
	}
	if err := ns.destroy(); err != nil {
		return err // stays in the journal: RestoreAll or Repair retries
	}
	removeNetnsLocked(ns)
	return syncJournalLocked()
}

func removeNetnsLocked(ns *Netns) {
	for i, n := range st.namespaces {
		if n == ns {
			st.namespaces = append(st.namespaces[:i], st.namespaces[i+1:]...)
			return
		}
	}
}

// destroy releases what this process holds on the namespace and removes its
// name. Each step is done once, so a failed destroy can be retried. st.mu is
// held, so deleted is written under both locks.
func (ns *Netns) destroy() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.handle != nil {
		ns.handle.Close()
		ns.handle = nil
	}
	if ns.fd >= 0 {
		unix.Close(ns.fd)
		ns.fd = -1
	}
	if ns.mounted {
		if err := unmountNetns(ns.Path); err != nil {
			return err
		}
		ns.mounted = false
	}
	if ns.file {
		if err := os.Remove(ns.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		ns.file = false
	}
	ns.deleted = true
	return nil
}

// unmountNetns detaches the bind mount on path; a path that is not (or no
// longer) a mount point is fine.
func unmountNetns(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}

// deleteNamedNetns deletes a namespace by path, like `ip netns delete`. It
// reports whether there was anything to delete.
func deleteNamedNetns(path string) (bool, error) {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := unmountNetns(path); err != nil {
		return true, err
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return true, err
	}
	return true, nil
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
		if ns.deleted || ns.fd < 0 {
			ns.mu.RUnlock()
			return -1, nil, fmt.Errorf("network namespace %s is deleted", ns.Name)
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
// it on deletion. It has a socket for NETLINK_ROUTE only: netlink calls
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
	if ns.deleted {
		h.Close()
		return nil, fmt.Errorf("network namespace %s is deleted", ns.Name)
	}
	if ns.handle != nil { // lost a race
		h.Close()
		return ns.handle, nil
	}
	ns.handle = h
	return h, nil
}
