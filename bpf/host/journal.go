package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const journalVersion = 1

type journalFile struct {
	Version int `json:"version"`
	PID     int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks from boot to
	// the start of the process. With BootID it tells a reused PID apart.
	StartTime uint64         `json:"start_time"`
	BootID    string         `json:"boot_id"`
	Cmdline   string         `json:"cmdline"`
	Sysctls   []sysctlRecord `json:"sysctls,omitempty"`
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

func journalPath(pid int) string {
	return filepath.Join(StateDir, fmt.Sprintf("journal-%d.json", pid))
}

// currentJournalLocked describes this process's outstanding changes.
func (j *Journal) currentJournalLocked() journalFile {
	id := self()
	f := journalFile{Version: journalVersion, PID: selfPID, StartTime: id.start, BootID: id.bootID, Cmdline: id.cmdline}
	for _, path := range j.keys {
		stack := j.changes[path]
		if len(stack) == 0 {
			continue
		}
		first, last := stack[0], stack[len(stack)-1]
		f.Sysctls = append(f.Sysctls, sysctlRecord{Name: first.name, Path: path, Old: first.prev, New: last.value, Time: first.time})
	}
	return f
}

// syncJournalLocked makes this process's journal file say what is
// outstanding, or removes it if nothing is.
func (j *Journal) syncJournalLocked() error {
	f := j.currentJournalLocked()
	path := journalPath(selfPID)
	if len(f.Sysctls) == 0 {
		if !j.fileExists {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove journal: %w", err)
		}
		j.fileExists = false
		return syncDir(StateDir)
	}
	if err := writeJournal(path, &f); err != nil {
		return err
	}
	j.fileExists = true
	return nil
}

func writeJournal(path string, j *journalFile) error {
	data, err := json.MarshalIndent(j, "", "\t")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	return nil
}

func readJournal(path string) (*journalFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j journalFile
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
