// Package proc reads what /proc says of a process: its state and start
// time, its command line, whether it still runs, and the boot it belongs
// to. The journals and the lock name a run by these, so that a dead run
// is told from a live one even when its PID was reused.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat is what /proc/<pid>/stat says of a process.
type Stat struct {
	State byte
	Start uint64 // field 22, clock ticks after boot
}

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return Stat{State: f[0][0], Start: start}, nil
}

// Alive reports whether process pid, started at start (0: unknown), is
// still running, and if not, why it counts as dead.
func Alive(pid int, start uint64) (bool, string) {
	p, err := ReadStat(pid)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return false, fmt.Sprintf("killed run pid %d", pid)
		}
		return true, "" // cannot tell: leave it alone
	}
	if start != 0 && p.Start != start {
		return false, fmt.Sprintf("dead run pid %d (the PID is now another process)", pid)
	}
	if p.State == 'Z' || p.State == 'X' {
		// A zombie holds nothing, unless only its main thread has exited.
		if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err != nil || len(tasks) <= 1 {
			return false, fmt.Sprintf("killed run pid %d", pid)
		}
	}
	return true, ""
}

// Exists reports whether process pid is still running (Alive, whatever
// its start time).
func Exists(pid int) bool {
	alive, _ := Alive(pid, 0)
	return alive
}

// Cmdline is process pid's command line, its arguments joined by spaces
// and cut at 200 bytes ("" when it cannot be read).
func Cmdline(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// BootID is the kernel's ID of this boot ("" when it cannot be read).
func BootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
