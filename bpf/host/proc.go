package host

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

type procStat struct {
	state byte
	start uint64 // field 22, clock ticks after boot
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procStat{state: f[0][0], start: start}, nil
}

// runAlive reports whether process pid, started at start (0: unknown), is
// still running, and if not, why it counts as dead.
func runAlive(pid int, start uint64) (bool, string) {
	p, err := readProcStat(pid)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return false, fmt.Sprintf("killed run pid %d", pid)
		}
		return true, "" // cannot tell: leave it alone
	}
	if start != 0 && p.start != start {
		return false, fmt.Sprintf("dead run pid %d (the PID is now another process)", pid)
	}
	if p.state == 'Z' || p.state == 'X' {
		// A zombie holds nothing, unless only its main thread has exited.
		if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err != nil || len(tasks) <= 1 {
			return false, fmt.Sprintf("killed run pid %d", pid)
		}
	}
	return true, ""
}

func pidExists(pid int) bool {
	alive, _ := runAlive(pid, 0)
	return alive
}

func procCmdline(pid int) string {
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

func bootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
