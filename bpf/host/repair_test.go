package host

// Repair of what dead runs left: their journals, read as the next run
// reads them.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hsDeadPID returns the PID of a process that has exited and been reaped.
func hsDeadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestStateRepairJournals(t *testing.T) {
	RequireRoot(t)
	hsSnapshot(t)
	v0 := hsRead(t, hsBurst)
	n, _ := strconv.Atoi(v0)
	v1, v2 := strconv.Itoa(n+1), strconv.Itoa(n+2)
	path, _ := sysctlPath(hsBurst)
	// Whatever happens, put it back.
	t.Cleanup(func() { writeSysctl(path, v0) })

	// Run A (older) set v0 -> v1 and died; its PID now belongs to another
	// process (our parent, with A's made-up start time). Run B then set
	// v1 -> v2 and was killed; its PID is gone. Run C is from another boot.
	now := time.Now()
	a, b, c := os.Getppid(), hsDeadPID(t), hsDeadPID(t)
	if b == c {
		c = hsDeadPID(t)
	}
	id := self()
	journals := map[int]*journalFile{
		a: {Version: 1, PID: a, StartTime: 1, BootID: id.bootID, Sysctls: []sysctlRecord{{Name: hsBurst, Path: path, Old: v0, New: v1, Time: now.Add(-2 * time.Second)}}},
		b: {Version: 1, PID: b, StartTime: 2, BootID: id.bootID, Sysctls: []sysctlRecord{{Name: hsBurst, Path: path, Old: v1, New: v2, Time: now.Add(-time.Second)}}},
		c: {Version: 1, PID: c, StartTime: 3, BootID: "not-this-boot", Sysctls: []sysctlRecord{{Name: hsBurst, Path: path, Old: "12345", New: v2, Time: now}}},
	}
	for pid, j := range journals {
		if _, err := os.Stat(journalPath(pid)); err == nil {
			t.Fatalf("journal for pid %d exists already", pid)
		}
		if err := writeJournal(journalPath(pid), j); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(journalPath(pid)) })
	}
	if err := writeSysctl(path, v2); err != nil {
		t.Fatal(err)
	}

	lines, err := testJournal.Repair()
	for _, l := range lines {
		t.Log("repair: ", l)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := hsRead(t, hsBurst); got != v0 {
		t.Errorf("%s is %s after Repair, want %s (oldest run's value)", hsBurst, got, v0)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		fmt.Sprintf("restored %s=%s left as %s by killed run pid %d", hsBurst, v1, v2, b),
		fmt.Sprintf("restored %s=%s left as %s by dead run pid %d (the PID is now another process)", hsBurst, v0, v1, a),
		fmt.Sprintf("discarded journal of run pid %d from an earlier boot", c),
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Repair lines lack %q", want)
		}
	}
	for pid := range journals {
		hsNoJournal(t, pid)
	}

	// A second Repair finds nothing.
	lines, err = testJournal.Repair()
	if err != nil || len(lines) > 0 {
		t.Errorf("second Repair: %q, %v", lines, err)
	}

	// A sysctl that a live run (here: this one) has changed on top of a
	// dead run's change is left until the live run is done with it.
	d := hsDeadPID(t)
	dj := &journalFile{Version: 1, PID: d, StartTime: 5, BootID: id.bootID, Sysctls: []sysctlRecord{{Name: hsBurst, Path: path, Old: v0, New: v1, Time: now}}}
	if err := writeJournal(journalPath(d), dj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(journalPath(d)) })
	if err := writeSysctl(path, v1); err != nil {
		t.Fatal(err)
	}
	t.Run("live", func(t *testing.T) {
		testJournal.SetSysctl(t, hsBurst, v2)
		lines, err := testJournal.Repair()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("not restoring %s=%s left by killed run pid %d: live run pid %d has changed it too", hsBurst, v0, d, selfPID)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
			t.Errorf("Repair: %q, want %q", lines, want)
		}
		if got := hsRead(t, hsBurst); got != v2 {
			t.Errorf("%s is %s, want %s (ours)", hsBurst, got, v2)
		}
		if r := hsJournalRecord(t, d, hsBurst); r == nil || r.Old != v0 {
			t.Errorf("dead journal record %+v, want it kept", r)
		}
	})
	if got := hsRead(t, hsBurst); got != v1 {
		t.Errorf("after our cleanup %s is %s, want %s", hsBurst, got, v1)
	}
	lines, err = testJournal.Repair()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("restored %s=%s left as %s by killed run pid %d", hsBurst, v0, v1, d); len(lines) != 1 || lines[0] != want {
		t.Errorf("Repair: %q, want %q", lines, want)
	}
	if got := hsRead(t, hsBurst); got != v0 {
		t.Errorf("%s is %s, want %s", hsBurst, got, v0)
	}
	hsNoJournal(t, d)
}
