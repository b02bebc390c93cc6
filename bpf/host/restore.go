package host

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// RestoreAll undoes every change this process still has outstanding: puts
// back sysctls in the reverse order of their first change, and removes
// the journal. It is
// safe to call more than once and from any goroutine; cleanups of changes it
// has undone do nothing. What it fails to undo stays in the journal for a
// later call or Repair.
func (j *Journal) RestoreAll() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err := j.restoreAllLocked()
	return err
}

func (j *Journal) restoreAllLocked() (lines []string, err error) {
	var errs []error
	for i := len(j.keys) - 1; i >= 0; i-- {
		path := j.keys[i]
		stack := j.changes[path]
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
			j.dropChangeLocked(c)
		}
		lines = append(lines, fmt.Sprintf("restored %s=%s (was %s)", first.name, first.prev, cur))
	}
	if err := j.syncJournalLocked(); err != nil {
		errs = append(errs, err)
	}
	return lines, errors.Join(errs...)
}

// RestoreOnSignal makes SIGINT, SIGTERM and SIGHUP (those not ignored
// when the process started) restore host state: the handler runs
// RestoreAll, prints what it restored to stderr and exits with status
// 128+signal (130 for SIGINT, 143 for SIGTERM), without running deferred
// calls or cleanups. From the signal on, SetSysctl and ChangeSysctl block
// until the exit. A second signal during the restore is ignored; SIGKILL
// leaves the journal to Repair. Calling it again does nothing.
func (j *Journal) RestoreOnSignal() {
	j.signals.Do(func() {
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
			j.mu.Lock() // kept until exit: nothing changes state after this
			j.frozen = true
			lines, err := j.restoreAllLocked()
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
