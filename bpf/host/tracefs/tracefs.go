// Package tracefs makes tracefs reachable where cilium/ebpf looks for it,
// without changing the host's mounts: a tracepoint's ID is read there, and
// containers often mount neither tracefs nor debugfs. It also lists
// tracefs's mounts, for the snapshots that prove a run left none behind.
package tracefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// dir is tracefs's own mount point, which sysfs provides (Linux 4.1).
const dir = "/sys/kernel/tracing"

// Do runs fn where tracefs is reachable at one of the places
// cilium/ebpf looks for it to read a tracepoint's ID (link.Tracepoint).
// Where neither /sys/kernel/tracing nor /sys/kernel/debug/tracing has it,
// as in containers that mount neither, fn runs on a thread of its own in
// a private mount namespace with tracefs mounted at /sys/kernel/tracing:
// the mount dies with the thread, so nothing is left to undo, even after
// a kill. cilium/ebpf looks for tracefs once per process, so every call
// that reads tracefs must go through Do. It returns an error
// wrapping ebpf.ErrNotSupported when the kernel has no tracefs.
func Do(fn func() error) error {
	if reachable() {
		return fn()
	}
	ch := make(chan error)
	go func() {
		// Never unlocked: the thread exits with this goroutine, and its
		// mount namespace with it.
		runtime.LockOSThread()
		ch <- inPrivate(fn)
	}()
	return <-ch
}

// inPrivate moves the calling thread to a mount namespace of its
// own, mounts tracefs there and runs fn.
func inPrivate(fn func() error) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	err := unix.Mount("tracefs", dir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("mount tracefs at %s: %w (CONFIG_TRACING): %w", dir, err, ebpf.ErrNotSupported)
	}
	if err != nil {
		return fmt.Errorf("mount tracefs at %s in a private mount namespace: %w", dir, err)
	}
	return fn()
}

// reachable says whether tracefs is mounted at its own place, or
// reachable through debugfs, whose tracing directory automounts tracefs
// since Linux 4.1 and was the tracing files themselves before.
func reachable() bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
		return true
	}
	return unix.Statfs("/sys/kernel/debug/tracing", &st) == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC)
}

// Mounts lists the mount points of tracefs in the calling thread's
// mount namespace, sorted: the thread's, since a thread that ran
// Do's private namespace and cannot exit (Go keeps the main
// thread) stays in it, and /proc/self is the main thread.
func Mounts() ([]string, error) {
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(s.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(fs) > 0 && fs[0] == "tracefs" {
			mounts = append(mounts, fields[4])
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	slices.Sort(mounts)
	return mounts, nil
}
