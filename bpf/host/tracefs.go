package host

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// tracefsDir is tracefs's own mount point, which sysfs provides (Linux 4.1).
const tracefsDir = "/sys/kernel/tracing"

// Tracefs makes tracefs reachable for as long as tb runs, at one of the
// places cilium/ebpf looks for it to read a tracepoint's ID
// (link.Tracepoint): where neither /sys/kernel/tracing nor
// /sys/kernel/debug/tracing has it, as in containers that mount neither,
// it mounts tracefs at /sys/kernel/tracing and unmounts it when tb ends.
// cilium/ebpf looks for tracefs once per process, so call Tracefs before
// the first attach. The mount is not journaled: a run killed meanwhile
// leaves tracefs mounted where the kernel meant it to be. It returns an error wrapping ebpf.ErrNotSupported
// when the kernel has no tracefs.
func Tracefs(tb testing.TB) error {
	tb.Helper()
	if tracefsReachable() {
		return nil
	}
	err := unix.Mount("tracefs", tracefsDir, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("mount tracefs at %s: %w (CONFIG_TRACING): %w", tracefsDir, err, ebpf.ErrNotSupported)
	}
	if err != nil {
		return fmt.Errorf("mount tracefs at %s: %w", tracefsDir, err)
	}
	tb.Cleanup(func() {
		if err := unix.Unmount(tracefsDir, unix.MNT_DETACH); err != nil {
			tb.Errorf("unmount tracefs at %s: %v", tracefsDir, err)
		}
	})
	return nil
}

// tracefsReachable says whether tracefs is mounted at its own place, or
// reachable through debugfs, whose tracing directory automounts tracefs
// since Linux 4.1 and was the tracing files themselves before.
func tracefsReachable() bool {
	var st unix.Statfs_t
	if unix.Statfs(tracefsDir, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
		return true
	}
	return unix.Statfs("/sys/kernel/debug/tracing", &st) == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC)
}

// tracefsMounts lists the mount points of tracefs in this process's mount
// namespace, sorted.
func tracefsMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
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
