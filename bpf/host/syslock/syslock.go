// Package syslock is the system-wide bpfbench lock that keeps one run at
// a time (the XDP dispatcher and sysctls are global), and its hand-off to
// a child process. It sits below host, whose journals share its
// directory, and knows nothing of what a run changes.
package syslock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"bpfbench/bpf/host/proc"

	"golang.org/x/sys/unix"
)

// Dir is the suite's state directory: the lock file, and host's journals
// (host.StateDir).
const Dir = "/run/bpfbench"

// FDEnv names the environment variable through which a process holding
// the lock (Take) can pass it to a child it starts: put the lock file
// (Lock.File) in exec.Cmd.ExtraFiles and set FDEnv to its descriptor
// number in the child (3 for the first extra file). Take in the child then
// succeeds at once without waiting for its parent, and its Release leaves
// the lock to the parent.
const FDEnv = "BPFBENCH_LOCK_FD"

var (
	lockPath = filepath.Join(Dir, "lock")
	selfPID  = os.Getpid()
	// selfCmdline is what the lock file says of its holder besides the PID.
	selfCmdline = sync.OnceValue(func() string { return proc.Cmdline(selfPID) })
)

// A Lock is the system-wide bpfbench lock, held: whoever took it owns it
// (the suite's TestMain, a test binary's child.RunTests) and hands its
// File to a child it starts (FDEnv).
type Lock struct {
	f       *os.File
	release func()
	once    sync.Once
}

// File is the lock's open file, to hand to a child (FDEnv).
func (l *Lock) File() *os.File { return l.f }

// Release lets go of the lock, once. A lock the parent handed over stays
// the parent's: only this process's descriptor of it closes.
func (l *Lock) Release() { l.once.Do(l.release) }

// Take takes the system-wide bpfbench lock, an exclusive flock on
// Dir/lock: the XDP dispatcher and sysctls are global, so one run at a
// time. If another process holds it, Take retries until wait has passed
// and then fails, naming the holder's PID (the holder writes it into the
// lock file). The kernel drops the lock when its holder dies, however it
// dies. The lock is per call, not per process: a second Take in the same
// process waits too. See FDEnv for handing it to a child process.
func Take(wait time.Duration) (*Lock, error) {
	if s := os.Getenv(FDEnv); s != "" {
		if l, ok := inheritedLock(s); ok {
			return l, nil
		}
	}
	return lockAt(lockPath, wait)
}

// inheritedLock checks that descriptor s is the lock file and that its open
// file, shared with the parent, holds the lock.
func inheritedLock(s string) (*Lock, bool) {
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 0 {
		return nil, false
	}
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Stat(lockPath, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		return nil, false
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil, false
	}
	// Ours to pass on explicitly, not to every process we start.
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), lockPath)
	return &Lock{f: f, release: func() {
		f.Close() // the parent's descriptor keeps the lock
	}}, true
}

func lockAt(path string, wait time.Duration) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		waited := time.Since(start)
		if waited >= wait {
			holder := lockHolder(path)
			f.Close()
			return nil, fmt.Errorf("another bpfbench run holds %s: %s; gave up after waiting %v (the XDP dispatcher and sysctls are global, so runs take turns)", path, holder, wait)
		}
		time.Sleep(min(50*time.Millisecond, wait-waited))
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt(fmt.Appendf(nil, "%d\n%s\n", selfPID, selfCmdline()), 0)
	}
	return &Lock{f: f, release: func() {
		f.Truncate(0)
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}}, nil
}

// lockHolder describes the process whose PID is in the lock file.
func lockHolder(path string) string {
	data, _ := os.ReadFile(path)
	first, rest, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return "held by a process that has not written its PID yet"
	}
	cmd := strings.TrimSpace(rest)
	if cmd == "" {
		cmd = proc.Cmdline(pid)
	}
	s := fmt.Sprintf("held by pid %d", pid)
	if pid == selfPID {
		s += " (this process)"
	}
	if cmd != "" {
		s += " (" + cmd + ")"
	}
	if !proc.Exists(pid) {
		s += ", which has exited: a child it passed the lock to still holds it"
	}
	return s
}
