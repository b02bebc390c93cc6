package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"bpfbench/bpf/host/proc"

	"golang.org/x/sys/unix"
)

// Repair undoes what earlier bpfbench processes that are now dead left
// behind, and returns one line per repair:
//
//   - sysctls in their journals are restored to the recorded old value,
//     latest change first across all dead runs;
//   - journals from an earlier boot are discarded, as the reboot reset what
//     they record.
//
// Sysctls are all a dead run can leave: what else it made died with it
// (docs/safety.md#what-a-killed-run-leaves).
//
// A run is dead if its PID does not exist, is a zombie, or belongs to a
// process with another start time. Live runs are left alone; a sysctl that
// a live run has also changed is not restored (its journal stays for a later
// Repair) and the line says so: this process's own changes (j) are a
// live run's. Call it holding the lock (syslock.Take).
func (j *Journal) Repair() ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()

	rp := &repair{
		boot:     proc.BootID(),
		liveKeys: map[string]int{},
	}
	for _, path := range j.keys {
		rp.liveKeys[path] = selfPID
	}
	journals, err := rp.readJournals()
	if err != nil {
		return nil, err
	}
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
	liveKeys map[string]int // sysctl path: live pid that changed it
	lines    []string
	errs     []error
}

// deadRun is the journal of a run that is gone.
type deadRun struct {
	path string
	j    *journalFile
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
			if w, err := strconv.Atoi(name[i+len(".tmp-"):]); err == nil && w != selfPID && !proc.Exists(w) {
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
			if proc.Exists(pid) {
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
			rp.lines = append(rp.lines, fmt.Sprintf("discarded journal of run pid %d from an earlier boot (the reboot reset its sysctls)", pid))
			continue
		}
		if alive, why := proc.Alive(pid, j.StartTime); alive {
			for _, r := range j.Sysctls {
				rp.liveKeys[r.Path] = pid
			}
		} else {
			rp.dead = append(rp.dead, &deadRun{path: path, j: j, why: why})
		}
	}

	return len(entries), nil
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
			j.Sysctls = rs
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
