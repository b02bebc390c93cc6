package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf/host/snapshot"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// hsHolders lists what holds the namespace of that name, in any process
// (snapshot.NetnsHolders).
func hsHolders(tb testing.TB, name string) []string {
	tb.Helper()
	held, err := snapshot.NetnsHolders(name)
	if err != nil {
		tb.Fatal(err)
	}
	return held
}

// hsGone fails tb unless nothing holds the namespace of that name any
// more, waiting for a process that exited to be reaped.
func hsGone(tb testing.TB, name string) {
	tb.Helper()
	held, err := snapshot.NetnsGone(name, 30*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	if len(held) > 0 {
		tb.Errorf("namespace %s is still held: %v", name, held)
	}
}

// hsThreadNetns is the inode of the calling thread's network namespace.
func hsThreadNetns(tb testing.TB) uint64 {
	tb.Helper()
	var s unix.Stat_t
	if err := unix.Stat(threadNetns, &s); err != nil {
		tb.Fatal(err)
	}
	return s.Ino
}

// hsThreadsIn lists the threads of this process in namespace ino.
func hsThreadsIn(tb testing.TB, ino uint64) []string {
	tb.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		tb.Fatal(err)
	}
	var in []string
	want := fmt.Sprintf("net:[%d]", ino)
	for _, task := range tasks {
		if l, err := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns/net")); err == nil && l == want {
			in = append(in, task.Name())
		}
	}
	return in
}

// hsFDsOn lists this process's file descriptors that are namespace ino.
func hsFDsOn(tb testing.TB, ino uint64) []string {
	tb.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	var on []string
	want := fmt.Sprintf("net:[%d]", ino)
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == want {
			on = append(on, fd.Name())
		}
	}
	return on
}

func TestNetnsVeth(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)

	var name string
	t.Run("create", func(t *testing.T) {
		start := time.Now()
		ns := NewNetns(t)
		t.Logf("NewNetns %s: %v", ns.Name, time.Since(start))
		name = ns.Name
		if want := fmt.Sprintf("net:[%d]", ns.Inode); ns.Name != want {
			t.Errorf("name %q, want %q", ns.Name, want)
		}
		// Held by this process's descriptor alone: no thread is in it,
		// and nothing names it in the file system.
		if held := hsHolders(t, ns.Name); len(held) != 1 || !strings.HasPrefix(held[0], "fd ") {
			t.Errorf("namespace held by %v, want one descriptor of this process", held)
		}

		start = time.Now()
		pairs, err := ns.AddVeth(24, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("AddVeth(24 pairs, 2 queues): %v", time.Since(start))
		if len(pairs) != 24 {
			t.Fatalf("got %d pairs, want 24", len(pairs))
		}

		h, err := ns.Handle()
		if err != nil {
			t.Fatal(err)
		}
		links, err := h.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]netlink.Link{}
		for _, l := range links {
			byName[l.Attrs().Name] = l
		}
		if lo := byName["lo"]; lo == nil || lo.Attrs().RawFlags&unix.IFF_UP == 0 {
			t.Errorf("lo is not up: %+v", lo)
		}
		seen := map[int]bool{}
		for i, p := range pairs {
			for j, end := range []Link{p.A, p.B} {
				side := "ab"[j]
				if want := fmt.Sprintf("v%d%c", i, side); end.Name != want {
					t.Errorf("pair %d: name %q, want %q", i, end.Name, want)
				}
				l := byName[end.Name]
				if l == nil {
					t.Errorf("%s: not in the namespace", end.Name)
					continue
				}
				a := l.Attrs()
				if l.Type() != "veth" {
					t.Errorf("%s: type %s", end.Name, l.Type())
				}
				if a.Index != end.Index || seen[end.Index] {
					t.Errorf("%s: index %d, returned %d", end.Name, a.Index, end.Index)
				}
				seen[end.Index] = true
				if a.NumTxQueues != 2 || a.NumRxQueues != 2 {
					t.Errorf("%s: %d tx, %d rx queues, want 2", end.Name, a.NumTxQueues, a.NumRxQueues)
				}
				if want := VethMAC(i, side); a.HardwareAddr.String() != want.String() || end.MAC.String() != want.String() {
					t.Errorf("%s: MAC %v (returned %v), want %v", end.Name, a.HardwareAddr, end.MAC, want)
				}
				if a.RawFlags&unix.IFF_UP == 0 {
					t.Errorf("%s: not up", end.Name)
				}
			}
		}

		// iproute2 sees the same namespace, entered by its descriptor.
		// iproute2's own ip, by its path: a busybox nsenter would run
		// busybox's ip applet.
		ip, err := exec.LookPath("ip")
		if err != nil {
			t.Fatal(err)
		}
		fd := ns.Path()
		out, err := exec.Command("nsenter", "--net="+fd, ip, "-o", "link", "show", "type", "veth").CombinedOutput()
		if err != nil {
			t.Fatalf("nsenter --net=%s ip link: %v\n%s", fd, err, out)
		}
		if n := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; n != 48 {
			t.Errorf("ip link show type veth in %s: %d lines, want 48:\n%s", ns.Name, n, out)
		}

		// More pairs number on.
		more, err := ns.AddVeth(1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if more[0].A.Name != "v24a" {
			t.Errorf("next pair is %s, want v24a", more[0].A.Name)
		}
	})
	if name == "" {
		return
	}
	hsGone(t, name)
}

func TestNetnsDo(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)

	// Keep this goroutine on one thread, to see what happens to it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	host := hsThreadNetns(t)

	ns := NewNetns(t)
	if got := hsThreadNetns(t); got != host {
		t.Fatalf("NewNetns left the calling thread in namespace %d", got)
	}
	if ns.Inode == 0 || ns.Inode == host {
		t.Fatalf("namespace inode %d (host %d)", ns.Inode, host)
	}
	var s unix.Stat_t
	if err := unix.Fstat(ns.fd, &s); err != nil || s.Ino != ns.Inode {
		t.Fatalf("the namespace's descriptor is inode %d (%v), want %d", s.Ino, err, ns.Inode)
	}
	if in := hsThreadsIn(t, ns.Inode); len(in) > 0 {
		t.Fatalf("threads %v are in the new namespace after NewNetns", in)
	}

	var inside uint64
	err := ns.Do(func() error {
		inside = hsThreadNetns(t)
		// An ifindex resolves in the namespace: lo is 1 everywhere, but
		// a veth made in ns is only found from inside it.
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside != ns.Inode {
		t.Errorf("inside Do the thread is in namespace %d, want %d", inside, ns.Inode)
	}
	if got := hsThreadNetns(t); got != host {
		t.Fatalf("after Do the thread is in namespace %d, want %d", got, host)
	}

	// Interfaces resolve in the namespace inside Do.
	pairs, err := ns.AddVeth(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = ns.Do(func() error {
		l, err := netlink.LinkByName(pairs[0].A.Name)
		if err != nil {
			return err
		}
		if l.Attrs().Index != pairs[0].A.Index {
			return fmt.Errorf("index %d, want %d", l.Attrs().Index, pairs[0].A.Index)
		}
		return nil
	})
	if err != nil {
		t.Errorf("look up %s inside Do: %v", pairs[0].A.Name, err)
	}
	if _, err := netlink.LinkByName(pairs[0].A.Name); err == nil {
		t.Errorf("%s is visible outside the namespace", pairs[0].A.Name)
	}

	// fn's error comes back; a panic still puts the thread back.
	sentinel := errors.New("sentinel")
	if err := ns.Do(func() error { return sentinel }); err != sentinel {
		t.Errorf("Do returned %v, want fn's error", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v", r)
			}
		}()
		ns.Do(func() error { panic("boom") })
	}()
	if got := hsThreadNetns(t); got != host {
		t.Fatalf("after a panic in Do the thread is in namespace %d, want %d", got, host)
	}
	if in := hsThreadsIn(t, ns.Inode); len(in) > 0 {
		t.Errorf("threads %v are still in the namespace", in)
	}

	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error { return nil }); err == nil {
		t.Error("Do in a deleted namespace succeeded")
	}
	if got := hsThreadNetns(t); got != host {
		t.Fatalf("after Do on a deleted namespace the thread is in %d", got)
	}
}

// TestNetnsFreed checks that deleting a namespace really frees it: nothing
// this package holds keeps it alive. A veth pair with one end in each of
// two namespaces goes away when either namespace is destroyed.
func TestNetnsFreed(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)

	a, b := NewNetns(t), NewNetns(t)
	ha, err := a.Handle()
	if err != nil {
		t.Fatal(err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "x"
	err = ha.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "y", PeerTxQLen: -1, PeerNamespace: netlink.NsFd(b.fd)})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := b.Handle()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hb.LinkByName("y"); err != nil {
		t.Fatalf("peer y not in %s: %v", b.Name, err)
	}

	a.Do(func() error { return nil }) // exercise Do too
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if fds := hsFDsOn(t, a.Inode); len(fds) > 0 {
		t.Errorf("fds %v still refer to the deleted namespace", fds)
	}
	if in := hsThreadsIn(t, a.Inode); len(in) > 0 {
		t.Errorf("threads %v are in the deleted namespace", in)
	}
	start := time.Now()
	for {
		_, err := hb.LinkByName("y")
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("veth peer y still in %s 20s after deleting %s: something keeps %s alive", b.Name, a.Name, a.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("namespace destroyed %v after delete", time.Since(start))
}
