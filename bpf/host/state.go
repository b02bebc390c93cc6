package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Host state the suite changes (sysctls, named network namespaces) is
// journaled before it is changed, restored by tb.Cleanup, by RestoreAll
// (TestMain after m.Run, and on SIGINT/SIGTERM through InstallSignalHandler)
// and, if the process is SIGKILLed or otherwise dies first, by the next
// run's Repair.
//
// The journal of process <pid> is StateDir/journal-<pid>.json. It is
// rewritten whole on every change (temporary file, fsync, rename, fsync of the
// directory), before the change it records, and removed once nothing is
// outstanding. It names the process by PID, start time (/proc/<pid>/stat
// field 22) and boot ID, so Repair can tell a dead run from a live one even
// when the PID has been reused, and can discard journals from before a
// reboot.

// StateDir holds the journals and the lock file.
const StateDir = "/run/bpfbench"

// LockFDEnv names the environment variable through which a process holding
// Lock can pass the lock to a child it starts: put the lock file (see
// HeldLockFile) in exec.Cmd.ExtraFiles and set LockFDEnv to its descriptor
// number in the child (3 for the first extra file). Lock in the child then
// succeeds at once without waiting for its parent, and its unlock leaves
// the lock to the parent.
const LockFDEnv = "BPFBENCH_LOCK_FD"

const journalVersion = 1

var (
	lockPath = filepath.Join(StateDir, "lock")
	selfPID  = os.Getpid()
)

var errFrozen = errors.New("bpfbench is exiting on a signal and has restored host state")

// st is what this process has changed and not yet restored.
var st struct {
	mu     sync.Mutex
	frozen bool // a signal handler has restored everything and is exiting
	nsSeq  int

	namespaces []*Netns // in creation order

	// sysctl changes: per /proc/sys path a stack of changes, newest last;
	// keys lists the paths with a non-empty stack in order of first change.
	keys    []string
	changes map[string][]*sysctlChange

	journalExists bool
}

type sysctlChange struct {
	name  string // as the caller spelled it
	path  string // /proc/sys/...
	prev  string // value before this change
	value string // value this change wrote
	time  time.Time
	done  bool
}

type journal struct {
	Version int `json:"version"`
	PID     int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks from boot to
	// the start of the process. With BootID it tells a reused PID apart.
	StartTime uint64         `json:"start_time"`
	BootID    string         `json:"boot_id"`
	Cmdline   string         `json:"cmdline"`
	Sysctls   []sysctlRecord `json:"sysctls,omitempty"`
	Netns     []netnsRecord  `json:"netns,omitempty"`
}

type sysctlRecord struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Old is the value before the run's first outstanding change: what to
	// restore. New is the value the run set last.
	Old  string    `json:"old"`
	New  string    `json:"new"`
	Time time.Time `json:"time"`
}

type netnsRecord struct {
	Name      string    `json:"name"`
	Path      string    `json:"path"`
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"`
	Time      time.Time `json:"time"`
}

// self is this process's identity as recorded in journals.
var self = sync.OnceValue(func() (id struct {
	start   uint64
	bootID  string
	cmdline string
}) {
	if p, err := readProcStat(selfPID); err == nil {
		id.start = p.start
	}
	id.bootID = bootID()
	id.cmdline = procCmdline(selfPID)
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

func journalPath(pid int) string {
	return filepath.Join(StateDir, fmt.Sprintf("journal-%d.json", pid))
}

// currentJournalLocked describes this process's outstanding changes.
func currentJournalLocked() journal {
	id := self()
	j := journal{Version: journalVersion, PID: selfPID, StartTime: id.start, BootID: id.bootID, Cmdline: id.cmdline}
	for _, path := range st.keys {
		stack := st.changes[path]
		if len(stack) == 0 {
			continue
		}
		first, last := stack[0], stack[len(stack)-1]
		j.Sysctls = append(j.Sysctls, sysctlRecord{Name: first.name, Path: path, Old: first.prev, New: last.value, Time: first.time})
	}
	for _, ns := range st.namespaces {
		j.Netns = append(j.Netns, netnsRecord{Name: ns.Name, Path: ns.Path, PID: selfPID, StartTime: id.start, Time: ns.created})
	}
	return j
}

// syncJournalLocked makes this process's journal file say what is
// outstanding, or removes it if nothing is.
func syncJournalLocked() error {
	j := currentJournalLocked()
	path := journalPath(selfPID)
	if len(j.Sysctls) == 0 && len(j.Netns) == 0 {
		if !st.journalExists {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove journal: %w", err)
		}
		st.journalExists = false
		return syncDir(StateDir)
	}
	if err := writeJournal(path, &j); err != nil {
		return err
	}
	st.journalExists = true
	return nil
}

func writeJournal(path string, j *journal) error {
	data, err := json.MarshalIndent(j, "", "\t")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

func readJournal(path string) (*journal, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &j, nil
}

// writeFileAtomic replaces path with data: no reader, and no crash, sees a
// partial file.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, selfPID)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SetSysctl writes value to the sysctl name (net.core.bpf_jit_harden, or
// with slashes, net/ipv4/conf/eth0.100/rp_filter) and registers tb.Cleanup
// to put back the value it replaced. The value it first replaced goes into
// this process's journal, fsynced, before the write, so RestoreAll and, for
// a run that died, Repair restore it too. Setting a sysctl again, in the same
// test or a subtest, stacks: each cleanup puts back the value its own call
// replaced, the journal keeps the original and the cleanup of the outermost
// call restores it. Cleanups may run in any order.
//
// It is for host sysctls: per-namespace net.* ones are changed, and
// restored, in the namespace the process started in, and setting a net.*
// sysctl from inside Netns.Do fails.
// A write that the kernel turns into a different value fails the test
// after the change is registered for restoring.
func SetSysctl(tb testing.TB, name, value string) {
	tb.Helper()
	undo, err := setSysctl(name, value)
	if undo != nil {
		tb.Cleanup(func() {
			if err := undo(); err != nil {
				tb.Errorf("bpf: %v", err)
			}
		})
	}
	if err != nil {
		tb.Fatalf("bpf: %v", err)
	}
}

// setSysctl is SetSysctl without testing.TB: undo, if not nil, undoes the
// change and must be called even if err is not nil.
func setSysctl(name, value string) (undo func() error, err error) {
	path, err := sysctlPath(name)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, "/proc/sys/net/") {
		if err := checkHostNetns(); err != nil {
			return nil, fmt.Errorf("set sysctl %s: %w", name, err)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.frozen {
		return nil, errFrozen
	}
	prev, err := readSysctl(path)
	if err != nil {
		return nil, fmt.Errorf("read sysctl %s: %w", name, err)
	}
	c := &sysctlChange{name: name, path: path, prev: prev, value: value, time: time.Now()}
	pushChangeLocked(c)
	if err := syncJournalLocked(); err != nil {
		dropChangeLocked(c)
		return nil, errors.Join(fmt.Errorf("set sysctl %s: %w", name, err), syncJournalLocked())
	}
	if err := writeSysctl(path, value); err != nil {
		dropChangeLocked(c)
		return nil, errors.Join(fmt.Errorf("set sysctl %s=%s: %w", name, value, err), syncJournalLocked())
	}
	undo = func() error {
		st.mu.Lock()
		defer st.mu.Unlock()
		return undoChangeLocked(c)
	}
	got, err := readSysctl(path)
	if err != nil {
		return undo, fmt.Errorf("read back sysctl %s: %w", name, err)
	}
	if normalizeSysctl(got) != normalizeSysctl(value) {
		return undo, fmt.Errorf("set sysctl %s=%s: it reads back as %s", name, value, got)
	}
	return undo, nil
}

func pushChangeLocked(c *sysctlChange) {
	if st.changes == nil {
		st.changes = make(map[string][]*sysctlChange)
	}
	stack := st.changes[c.path]
	if len(stack) == 0 {
		st.keys = append(st.keys, c.path)
	}
	st.changes[c.path] = append(stack, c)
}

// dropChangeLocked forgets c without writing anything.
func dropChangeLocked(c *sysctlChange) {
	c.done = true
	stack := st.changes[c.path]
	for i, o := range stack {
		if o == c {
			stack = append(stack[:i:i], stack[i+1:]...)
			break
		}
	}
	if len(stack) > 0 {
		st.changes[c.path] = stack
		return
	}
	delete(st.changes, c.path)
	for i, k := range st.keys {
		if k == c.path {
			st.keys = append(st.keys[:i:i], st.keys[i+1:]...)
			break
		}
	}
}

// undoChangeLocked undoes c. If c is the newest change of its sysctl, the
// sysctl goes back to what c replaced; otherwise the next newer change
// inherits that value, to write when it is undone.
func undoChangeLocked(c *sysctlChange) error {
	if c.done {
		return nil
	}
	stack := st.changes[c.path]
	i := 0
	for i < len(stack) && stack[i] != c {
		i++
	}
	if i == len(stack) {
		c.done = true
		return nil
	}
	if i == len(stack)-1 {
		if err := writeSysctl(c.path, c.prev); err != nil {
			return fmt.Errorf("restore sysctl %s=%s: %w", c.name, c.prev, err)
		}
	} else {
		stack[i+1].prev = c.prev
	}
	dropChangeLocked(c)
	return syncJournalLocked()
}

// RestoreAll undoes every change this process still has outstanding:
// deletes the namespaces it created, newest first, then puts back sysctls
// in the reverse order of their first change, and removes the journal. It is
// safe to call more than once and from any goroutine; cleanups of changes it
// has undone do nothing. What it fails to undo stays in the journal for a
// later call or Repair.
func RestoreAll() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, err := restoreAllLocked()
	return err
}

func restoreAllLocked() (lines []string, err error) {
	var errs []error
	for i := len(st.namespaces) - 1; i >= 0; i-- {
		ns := st.namespaces[i]
		if err := ns.destroy(); err != nil {
			errs = append(errs, fmt.Errorf("delete network namespace %s: %w", ns.Name, err))
			continue
		}
		removeNetnsLocked(ns)
		lines = append(lines, "deleted network namespace "+ns.Name)
	}
	for i := len(st.keys) - 1; i >= 0; i-- {
		path := st.keys[i]
		stack := st.changes[path]
		if len(stack) == 0 {
			continue
		}
		first := stack[0]
		cur, _ := readSysctl(path)
		if err := writeSysctl(path, first.prev); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", first.name, first.prev, err))
			continue
		}
		for _, c := range append([]*sysctlChange(nil), stack...) {
			dropChangeLocked(c)
		}
		lines = append(lines, fmt.Sprintf("restored %s=%s (was %s)", first.name, first.prev, cur))
	}
	if err := syncJournalLocked(); err != nil {
		errs = append(errs, err)
	}
	return lines, errors.Join(errs...)
}

var sigOnce sync.Once

// InstallSignalHandler makes SIGINT, SIGTERM and SIGHUP (those not ignored
// when the process started) restore host state: the handler runs RestoreAll,
// prints what it restored to stderr and exits with status 128+signal (130
// for SIGINT, 143 for SIGTERM), without running deferred calls or cleanups.
// From the signal on, SetSysctl and NewNetns block until the exit. A second
// signal during the restore is ignored; SIGKILL leaves the journal to
// Repair. Calling it again does nothing.
func InstallSignalHandler() {
	sigOnce.Do(func() {
		var sigs []os.Signal
		for _, s := range []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP} {
			if !signal.Ignored(s) {
				sigs = append(sigs, s)
			}
		}
		if len(sigs) == 0 {
			return
		}
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, sigs...)
		go func() {
			s := <-ch
			fmt.Fprintf(os.Stderr, "bpfbench: %v: restoring host state\n", s)
			st.mu.Lock() // kept until exit: nothing changes state after this
			st.frozen = true
			lines, err := restoreAllLocked()
			for _, l := range lines {
				fmt.Fprintln(os.Stderr, "bpfbench: "+l)
			}
			if len(lines) == 0 && err == nil {
				fmt.Fprintln(os.Stderr, "bpfbench: nothing to restore")
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "bpfbench: restore failed (the next run repairs what is left): %v\n", err)
			}
			code := 1
			if n, ok := s.(syscall.Signal); ok {
				code = 128 + int(n)
			}
			os.Exit(code)
		}()
	})
}

// Repair undoes what earlier bpfbench processes that are now dead left
// behind, and returns one line per repair:
//
//   - sysctls in their journals are restored to the recorded old value,
//     latest change first across all dead runs;
//   - namespaces /run/netns/bpfbench-<pid>-* whose run is dead (or that no
//     journal claims) are deleted;
//   - journals from an earlier boot are discarded, as the reboot reset what
//     they record.
//
// A run is dead if its PID does not exist, is a zombie, or belongs to a
// process with another start time. Live runs are left alone; a sysctl that
// a live run has also changed is not restored (its journal stays for a later
// Repair) and the line says so. Call it holding Lock.
func Repair() ([]string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()

	rp := &repair{
		boot:     bootID(),
		live:     map[int]*journal{},
		liveKeys: map[string]int{},
		deadWhy:  map[int]string{},
	}
	for _, path := range st.keys {
		rp.liveKeys[path] = selfPID
	}
	journals, err := rp.readJournals()
	if err != nil {
		return nil, err
	}
	// Namespaces first, as RestoreAll does.
	rp.deleteNamespaces()
	rp.restoreSysctls()
	if journals > 0 {
		syncDir(StateDir)
	}
	return rp.lines, errors.Join(rp.errs...)
}

// repair is one Repair: what it found of the runs before this one, and
// what it did and failed to do.
type repair struct {
	boot     string
	dead     []*deadRun
	live     map[int]*journal // pid: journal of a live run
	liveKeys map[string]int   // sysctl path: live pid that changed it
	deadWhy  map[int]string   // pid: why its run is dead
	lines    []string
	errs     []error
}

// deadRun is the journal of a run that is gone.
type deadRun struct {
	path string
	j    *journal
	why  string
}

// readJournals sorts the journals in StateDir into live and dead runs,
// discarding half-written ones and those of an earlier boot, and returns
// how many entries StateDir had.
func (rp *repair) readJournals() (int, error) {
	entries, err := os.ReadDir(StateDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	for _, e := range entries {
		name := e.Name()
		if i := strings.Index(name, ".tmp-"); i > 0 && strings.HasPrefix(name, "journal-") {
			// A half-written journal of a writer that died.
			if w, err := strconv.Atoi(name[i+len(".tmp-"):]); err == nil && w != selfPID && !pidExists(w) {
				os.Remove(filepath.Join(StateDir, name))
			}
			continue
		}
		pid, ok := parseJournalName(name)
		if !ok || pid == selfPID {
			continue
		}
		path := filepath.Join(StateDir, name)
		j, err := readJournal(path)
		if err != nil || j.PID != pid {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if pidExists(pid) {
				continue // maybe live; leave it
			}
			bad := path + ".corrupt"
			os.Rename(path, bad)
			rp.errs = append(rp.errs, fmt.Errorf("unreadable journal of dead run pid %d moved to %s: %v", pid, bad, err))
			continue
		}
		if j.BootID != "" && rp.boot != "" && j.BootID != rp.boot {
			if err := os.Remove(path); err != nil {
				rp.errs = append(rp.errs, err)
				continue
			}
			rp.deadWhy[pid] = fmt.Sprintf("run pid %d of an earlier boot", pid)
			rp.lines = append(rp.lines, fmt.Sprintf("discarded journal of run pid %d from an earlier boot (the reboot reset its sysctls)", pid))
			continue
		}
		if alive, why := runAlive(pid, j.StartTime); alive {
			rp.live[pid] = j
			for _, r := range j.Sysctls {
				rp.liveKeys[r.Path] = pid
			}
		} else {
			rp.deadWhy[pid] = why
			rp.dead = append(rp.dead, &deadRun{path: path, j: j, why: why})
		}
	}

	return len(entries), nil
}

// deleteNamespaces deletes the namespaces of dead runs, and those no
// journal claims.
func (rp *repair) deleteNamespaces() {
	nsEntries, err := os.ReadDir(NetnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		rp.errs = append(rp.errs, err)
	}
	for _, e := range nsEntries {
		name := e.Name()
		pid, ok := parseNetnsName(name)
		if !ok {
			continue
		}
		why := ""
		switch {
		case pid == selfPID:
			mine := false
			for _, ns := range st.namespaces {
				mine = mine || ns.Name == name
			}
			if mine {
				continue
			}
			why = fmt.Sprintf("dead run pid %d (the PID is now this process)", pid)
		case rp.live[pid] != nil:
			continue
		case rp.deadWhy[pid] != "":
			why = rp.deadWhy[pid]
		default:
			// No journal when we looked. A run journals a namespace before
			// creating it and removes its journal only after deleting it,
			// so look again now that the namespace is known to exist.
			j, err := readJournal(journalPath(pid))
			if err == nil {
				if alive, _ := runAlive(pid, j.StartTime); alive {
					continue
				}
			} else if !errors.Is(err, fs.ErrNotExist) && pidExists(pid) {
				continue
			}
			why = fmt.Sprintf("killed run pid %d", pid)
			if pidExists(pid) {
				why = fmt.Sprintf("dead run pid %d (the PID is now another process)", pid)
			}
		}
		did, err := deleteNamedNetns(filepath.Join(NetnsDir, name))
		if err != nil {
			rp.errs = append(rp.errs, fmt.Errorf("delete network namespace %s left by %s: %w", name, why, err))
			continue
		}
		if did {
			rp.lines = append(rp.lines, fmt.Sprintf("deleted network namespace %s left by %s", name, why))
		}
	}

}

// restoreSysctls puts back what dead runs changed, newest change first, so
// that where runs changed the same sysctl one after the other the oldest
// value wins, and keeps in their journals what it could not restore.
func (rp *repair) restoreSysctls() {
	type rec struct {
		run *deadRun
		r   sysctlRecord
	}
	var recs []rec
	for _, d := range rp.dead {
		for _, r := range d.j.Sysctls {
			recs = append(recs, rec{d, r})
		}
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].r.Time.After(recs[b].r.Time) })
	left := map[*deadRun][]sysctlRecord{}
	for _, x := range recs {
		r, d := x.r, x.run
		if err := checkSysctlPath(r.Path); err != nil {
			rp.errs = append(rp.errs, fmt.Errorf("journal %s: %w", d.path, err))
			left[d] = append(left[d], r)
			continue
		}
		if pid, ok := rp.liveKeys[r.Path]; ok {
			rp.lines = append(rp.lines, fmt.Sprintf("not restoring %s=%s left by %s: live run pid %d has changed it too; a later Repair will", r.Name, r.Old, d.why, pid))
			left[d] = append(left[d], r)
			continue
		}
		cur, err := readSysctl(r.Path)
		if errors.Is(err, fs.ErrNotExist) {
			rp.lines = append(rp.lines, fmt.Sprintf("dropped %s=%s left by %s: the sysctl no longer exists", r.Name, r.Old, d.why))
			continue
		}
		if err != nil {
			rp.errs = append(rp.errs, fmt.Errorf("read sysctl %s: %w", r.Name, err))
			left[d] = append(left[d], r)
			continue
		}
		if normalizeSysctl(cur) == normalizeSysctl(r.Old) {
			continue
		}
		if err := writeSysctl(r.Path, r.Old); err != nil {
			rp.errs = append(rp.errs, fmt.Errorf("restore sysctl %s=%s left as %s by %s: %w", r.Name, r.Old, cur, d.why, err))
			left[d] = append(left[d], r)
			continue
		}
		rp.lines = append(rp.lines, fmt.Sprintf("restored %s=%s left as %s by %s", r.Name, r.Old, cur, d.why))
	}
	for _, d := range rp.dead {
		if rs := left[d]; len(rs) > 0 {
			// Keep in the original order.
			sort.SliceStable(rs, func(a, b int) bool { return rs[a].Time.Before(rs[b].Time) })
			j := *d.j
			j.Sysctls, j.Netns = rs, nil
			if err := writeJournal(d.path, &j); err != nil {
				rp.errs = append(rp.errs, err)
			}
			continue
		}
		if err := os.Remove(d.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			rp.errs = append(rp.errs, err)
		}
	}
}

func parseJournalName(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "journal-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".json")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// parseNetnsName returns the PID in bpfbench-<pid>-<seq>.
func parseNetnsName(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, NetnsPrefix)
	if !ok {
		return 0, false
	}
	p, seq, ok := strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	if _, err := strconv.Atoi(seq); err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

// Lock takes the system-wide bpfbench lock, an exclusive flock on
// StateDir/lock: the XDP dispatcher and sysctls are global, so one run at a
// time. If another process holds it, Lock retries until wait has passed
// and then fails, naming the holder's PID (the holder writes it into the
// lock file). The kernel drops the lock when its holder dies, however it
// dies. The lock is per call, not per process: a second Lock in the same
// process waits too. See LockFDEnv for handing it to a child process.
func Lock(wait time.Duration) (unlock func(), err error) {
	if s := os.Getenv(LockFDEnv); s != "" {
		if unlock, ok := inheritedLock(s); ok {
			return unlock, nil
		}
	}
	return lockAt(lockPath, wait)
}

var lockState struct {
	mu   sync.Mutex
	held []*os.File // lock files of Lock calls not yet unlocked, newest last
}

// HeldLockFile returns the file of a Lock this process holds, or nil.
func HeldLockFile() *os.File {
	lockState.mu.Lock()
	defer lockState.mu.Unlock()
	if len(lockState.held) == 0 {
		return nil
	}
	return lockState.held[len(lockState.held)-1]
}

// inheritedLock checks that descriptor s is the lock file and that its open
// file, shared with the parent, holds the lock.
func inheritedLock(s string) (func(), bool) {
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
	return rememberLockFile(f, func() {
		f.Close() // the parent's descriptor keeps the lock
	}), true
}

// rememberLockFile records f as a held lock file (HeldLockFile) and
// returns what releases it, once: forget it, then release.
func rememberLockFile(f *os.File, release func()) func() {
	lockState.mu.Lock()
	lockState.held = append(lockState.held, f)
	lockState.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			forgetLockFile(f)
			release()
		})
	}
}

func forgetLockFile(f *os.File) {
	lockState.mu.Lock()
	defer lockState.mu.Unlock()
	for i, g := range lockState.held {
		if g == f {
			lockState.held = append(lockState.held[:i:i], lockState.held[i+1:]...)
			return
		}
	}
}

func lockAt(path string, wait time.Duration) (func(), error) {
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
		f.WriteAt(fmt.Appendf(nil, "%d\n%s\n", selfPID, self().cmdline), 0)
	}
	return rememberLockFile(f, func() {
		f.Truncate(0)
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}), nil
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
		cmd = procCmdline(pid)
	}
	s := fmt.Sprintf("held by pid %d", pid)
	if pid == selfPID {
		s += " (this process)"
	}
	if cmd != "" {
		s += " (" + cmd + ")"
	}
	if !pidExists(pid) {
		s += ", which has exited: a child it passed the lock to still holds it"
	}
	return s
}

// sysctlPath maps a sysctl name to its file: dots separate components,
// unless the name has slashes, which then do (as for sysctl(8)).
func sysctlPath(name string) (string, error) {
	rel := name
	if !strings.Contains(name, "/") {
		rel = strings.ReplaceAll(name, ".", "/")
	}
	rel = strings.Trim(rel, "/")
	path := "/proc/sys/" + rel
	if err := checkSysctlPath(path); err != nil || rel == "" {
		return "", fmt.Errorf("bad sysctl name %q", name)
	}
	return path, nil
}

func checkSysctlPath(path string) error {
	if !strings.HasPrefix(path, "/proc/sys/") || filepath.Clean(path) != path || strings.Contains(path, "/../") {
		return fmt.Errorf("bad sysctl path %q", path)
	}
	return nil
}

func readSysctl(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(data), "\n"), nil
}

func writeSysctl(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// normalizeSysctl makes values comparable: "32768\t60999" is "32768 60999".
func normalizeSysctl(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// checkHostNetns fails if the calling thread is not in the network
// namespace the process started in (as inside Netns.Do).
func checkHostNetns() error {
	var s unix.Stat_t
	if err := unix.Stat(threadNetns, &s); err != nil {
		return err
	}
	if host := hostNetns(); host != 0 && s.Ino != host {
		return errors.New("the calling thread is in another network namespace (inside Netns.Do?); only host sysctls are journaled")
	}
	return nil
}

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
