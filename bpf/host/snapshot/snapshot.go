// Package snapshot reads the part of the machine's state the suite may
// change (XDP programs and BPF links, sysctls, tracefs mounts, and what
// holds a network namespace), so that its tests can compare before and
// after a run and prove it left nothing behind.
package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"bpfbench/bpf/host/tracefs"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// State is the part of the machine's state the suite may change: what
// its tests compare before and after a run to prove it left nothing behind.
type State struct {
	XDPProgs int               // XDP programs loaded, anywhere
	Links    int               // BPF links, of any type
	HostXDP  []string          // host-namespace devices with an XDP program
	Sysctls  map[string]string // the sysctls the suite may change
	Tracefs  []string          // where tracefs is mounted
}

// Sysctls are the sysctls a State holds.
var Sysctls = []string{
	"net.core.bpf_jit_harden",
	"net.core.bpf_jit_enable",
	"kernel.bpf_stats_enabled",
}

// Take reads the state. Call it from a thread in the host namespace.
func Take() (State, error) {
	var s State
	var err error
	if s.XDPProgs, err = CountXDPPrograms(); err != nil {
		return s, err
	}
	if s.Links, err = countLinks(); err != nil {
		return s, err
	}
	devs, err := netlink.LinkList()
	if err != nil {
		return s, fmt.Errorf("list host devices: %w", err)
	}
	for _, d := range devs {
		if x := d.Attrs().Xdp; x != nil && x.Attached {
			s.HostXDP = append(s.HostXDP, d.Attrs().Name)
		}
	}
	s.Sysctls = map[string]string{}
	for _, name := range Sysctls {
		v, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
		if err != nil {
			return s, err
		}
		s.Sysctls[name] = strings.TrimSpace(string(v))
	}
	if s.Tracefs, err = tracefs.Mounts(); err != nil {
		return s, err
	}
	return s, nil
}

// countLinks counts BPF links. Opening a link that is still being set up
// fails with EAGAIN (the kernel has allocated its ID, not yet finished
// it), so the count starts again, a few times, before giving up.
func countLinks() (int, error) {
	var err error
	for try := 0; try < 20; try++ {
		n := 0
		it := new(link.Iterator)
		for it.Next() {
			n++
		}
		if err = it.Err(); err == nil {
			return n, nil
		}
		if !errors.Is(err, unix.EAGAIN) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("count BPF links: %w", err)
}

// settleQuiet is how long the state must stay the same to be settled:
// on a busy machine two snapshots close together can agree while many
// programs of an earlier test's child still wait to be freed.
const settleQuiet = 500 * time.Millisecond

// Settled takes snapshots until the state has stayed the same for
// settleQuiet, or wait has passed: programs and links are freed
// asynchronously once their last descriptor closes (an RCU grace period,
// longer on a busy or emulated CPU), so a snapshot taken just after a
// test may still count them.
func Settled(wait time.Duration) (State, error) {
	prev, err := Take()
	if err != nil {
		return prev, err
	}
	since := time.Now()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		cur, err := Take()
		if err != nil {
			return cur, err
		}
		if prev.Diff(cur) != "" {
			prev, since = cur, time.Now()
			continue
		}
		if time.Since(since) >= settleQuiet {
			return cur, nil
		}
	}
	return prev, nil
}

// Diff describes how t differs from s, or returns "" when it does not.
func (s State) Diff(t State) string {
	var d []string
	if s.XDPProgs != t.XDPProgs {
		d = append(d, fmt.Sprintf("XDP programs %d -> %d", s.XDPProgs, t.XDPProgs))
	}
	if s.Links != t.Links {
		d = append(d, fmt.Sprintf("BPF links %d -> %d", s.Links, t.Links))
	}
	if !slices.Equal(s.HostXDP, t.HostXDP) {
		d = append(d, fmt.Sprintf("host devices with XDP %v -> %v", s.HostXDP, t.HostXDP))
	}
	for _, name := range Sysctls {
		if s.Sysctls[name] != t.Sysctls[name] {
			d = append(d, fmt.Sprintf("%s %s -> %s", name, s.Sysctls[name], t.Sysctls[name]))
		}
	}
	if !slices.Equal(s.Tracefs, t.Tracefs) {
		d = append(d, fmt.Sprintf("tracefs mounts %v -> %v", s.Tracefs, t.Tracefs))
	}
	return strings.Join(d, "; ")
}

// CountXDPPrograms counts the XDP programs loaded in the kernel. Programs
// attached anywhere share the dispatcher with the suite's, so a run that
// starts with some measures a fuller dispatcher than it names.
func CountXDPPrograms() (int, error) {
	n := 0
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("iterate program IDs: %w", err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // unloaded meanwhile
		}
		if p.Type() == ebpf.XDP {
			n++
		}
		p.Close()
	}
}

// NetnsHolders lists what keeps the network namespace name alive (its
// kernel name, net:[<inode>], as host.Netns.Name): the threads in it, the
// descriptors of it, and its mounts, in every process and mount
// namespace. A socket opened inside it holds it too and is not listed, but
// it belongs to a process, so for a namespace whose creator has exited,
// none listed means the kernel has destroyed it.
func NetnsHolders(name string) ([]string, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var held []string
	mountsRead := map[string]bool{}
	for _, p := range procs {
		pid := p.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		dir := filepath.Join("/proc", pid)
		tasks, _ := os.ReadDir(filepath.Join(dir, "task"))
		for _, t := range tasks {
			if l, _ := os.Readlink(filepath.Join(dir, "task", t.Name(), "ns/net")); l == name {
				held = append(held, fmt.Sprintf("thread %s of pid %s", t.Name(), pid))
			}
		}
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join(dir, "fd", fd.Name())); l == name {
				held = append(held, fmt.Sprintf("fd %s of pid %s", fd.Name(), pid))
			}
		}
		// One process per mount namespace shows its mounts.
		mnt, err := os.Readlink(filepath.Join(dir, "ns/mnt"))
		if err != nil || mountsRead[mnt] {
			continue
		}
		mountsRead[mnt] = true
		info, _ := os.ReadFile(filepath.Join(dir, "mountinfo"))
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.Contains(line, " "+name+" ") {
				held = append(held, fmt.Sprintf("mount %s in %s", f[4], mnt))
			}
		}
	}
	return held, nil
}

// NetnsGone waits up to wait for nothing to hold the namespace name
// (NetnsHolders), as a process that exited is reaped, and returns what
// still holds it then: none when it is gone.
func NetnsGone(name string, wait time.Duration) ([]string, error) {
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		held, err := NetnsHolders(name)
		if err != nil || len(held) == 0 || time.Now().After(deadline) {
			return held, err
		}
	}
}
