package host

import (
	"errors"
	"os"
	"sync"

	"bpfbench/bpf/host/proc"
	"bpfbench/bpf/host/syslock"

	"golang.org/x/sys/unix"
)

// The host state the suite changes and that outlives a process, sysctls,
// is journaled before it is changed (Journal), restored by tb.Cleanup, by
// Journal.RestoreAll (TestMain after m.Run, and on SIGINT/SIGTERM through
// RestoreOnSignal) and, if the process is SIGKILLed or otherwise dies
// first, by the next run's Repair. Everything else the suite makes
// (network namespaces, BPF programs, links, stats) it holds by a file
// descriptor, which dies with the process.
//
// The journal of process <pid> is StateDir/journal-<pid>.json. It is
// rewritten whole on every change (temporary file, fsync, rename, fsync of the
// directory), before the change it records, and removed once nothing is
// outstanding. It names the process by PID, start time (/proc/<pid>/stat
// field 22) and boot ID, so Repair can tell a dead run from a live one even
// when the PID has been reused, and can discard journals from before a
// reboot.

// StateDir holds the journals and the lock file (syslock).
const StateDir = syslock.Dir

var selfPID = os.Getpid()

var errFrozen = errors.New("bpfbench is exiting on a signal and has restored host state")

// A Journal is what this process has changed on the host and not yet
// restored: the sysctls, each journaled before it is changed. The run
// owns it (the suite's TestMain makes one, NewJournal) and restores
// through it; its file is StateDir/journal-<pid>.json, so a process
// keeps one.
type Journal struct {
	mu     sync.Mutex
	frozen bool // a signal handler has restored everything and is exiting

	// sysctl changes: per /proc/sys path a stack of changes, newest last;
	// keys lists the paths with a non-empty stack in order of first change.
	keys    []string
	changes map[string][]*sysctlChange

	fileExists bool
	signals    sync.Once // RestoreOnSignal
}

// NewJournal is an empty journal of this process.
func NewJournal() *Journal {
	return &Journal{changes: map[string][]*sysctlChange{}}
}

// self is this process's identity as recorded in journals.
var self = sync.OnceValue(func() (id struct {
	start   uint64
	bootID  string
	cmdline string
}) {
	if p, err := proc.ReadStat(selfPID); err == nil {
		id.start = p.Start
	}
	id.bootID = proc.BootID()
	id.cmdline = proc.Cmdline(selfPID)
	return id
})

// hostNetns is the inode of the network namespace the process started in.
var hostNetns = sync.OnceValue(func() uint64 {
	var s unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &s); err != nil {
		return 0
	}
	return s.Ino
})

func init() { hostNetns() }
