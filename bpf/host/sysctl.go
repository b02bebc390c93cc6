package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type sysctlChange struct {
	name  string // as the caller spelled it
	path  string // /proc/sys/...
	prev  string // value before this change
	value string // value this change wrote
	time  time.Time
	done  bool
}

// SetSysctl writes value to the sysctl name (net.core.bpf_jit_harden, or
// with slashes, net/ipv4/conf/eth0.100/rp_filter, or a kernel tunable of
// sysfs by its path, /sys/kernel/rcu_expedited) and registers tb.Cleanup
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
func (j *Journal) SetSysctl(tb testing.TB, name, value string) {
	tb.Helper()
	undo, err := j.ChangeSysctl(name, value)
	if undo != nil {
		tb.Cleanup(func() {
			if err := undo(); err != nil {
				tb.Errorf("host: %v", err)
			}
		})
	}
	if err != nil {
		tb.Fatalf("host: %v", err)
	}
}

// ChangeSysctl is SetSysctl for the length of a function rather than a
// test: undo, if not nil, undoes the change and must be called even if
// err is not nil.
func (j *Journal) ChangeSysctl(name, value string) (undo func() error, err error) {
	path, err := sysctlPath(name)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, "/proc/sys/net/") {
		if err := checkHostNetns(); err != nil {
			return nil, fmt.Errorf("set sysctl %s: %w", name, err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.frozen {
		return nil, errFrozen
	}
	prev, err := readSysctl(path)
	if err != nil {
		return nil, fmt.Errorf("read sysctl %s: %w", name, err)
	}
	c := &sysctlChange{name: name, path: path, prev: prev, value: value, time: time.Now()}
	j.pushChangeLocked(c)
	if err := j.syncJournalLocked(); err != nil {
		j.dropChangeLocked(c)
		return nil, errors.Join(fmt.Errorf("set sysctl %s: %w", name, err), j.syncJournalLocked())
	}
	if err := writeSysctl(path, value); err != nil {
		j.dropChangeLocked(c)
		return nil, errors.Join(fmt.Errorf("set sysctl %s=%s: %w", name, value, err), j.syncJournalLocked())
	}
	undo = func() error {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.undoChangeLocked(c)
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

func (j *Journal) pushChangeLocked(c *sysctlChange) {
	stack := j.changes[c.path]
	if len(stack) == 0 {
		j.keys = append(j.keys, c.path)
	}
	j.changes[c.path] = append(stack, c)
}

// dropChangeLocked forgets c without writing anything.
func (j *Journal) dropChangeLocked(c *sysctlChange) {
	c.done = true
	stack := j.changes[c.path]
	for i, o := range stack {
		if o == c {
			stack = append(stack[:i:i], stack[i+1:]...)
			break
		}
	}
	if len(stack) > 0 {
		j.changes[c.path] = stack
		return
	}
	delete(j.changes, c.path)
	for i, k := range j.keys {
		if k == c.path {
			j.keys = append(j.keys[:i:i], j.keys[i+1:]...)
			break
		}
	}
}

// undoChangeLocked undoes c. If c is the newest change of its sysctl, the
// sysctl goes back to what c replaced; otherwise the next newer change
// inherits that value, to write when it is undone.
func (j *Journal) undoChangeLocked(c *sysctlChange) error {
	if c.done {
		return nil
	}
	stack := j.changes[c.path]
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
	j.dropChangeLocked(c)
	return j.syncJournalLocked()
}

// sysctlPath maps a sysctl name to its file: dots separate components,
// unless the name has slashes, which then do (as for sysctl(8)). A name
// under /sys/kernel/ is the path of a tunable sysfs keeps there.
func sysctlPath(name string) (string, error) {
	if strings.HasPrefix(name, sysfsKernel) {
		if err := checkSysctlPath(name); err != nil || name == sysfsKernel {
			return "", fmt.Errorf("bad sysctl name %q", name)
		}
		return name, nil
	}
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

// sysfsKernel holds the kernel's tunables that sysfs keeps rather than
// /proc/sys, such as rcu_expedited.
const sysfsKernel = "/sys/kernel/"

func checkSysctlPath(path string) error {
	if (!strings.HasPrefix(path, "/proc/sys/") && !strings.HasPrefix(path, sysfsKernel)) || filepath.Clean(path) != path || strings.Contains(path, "/../") {
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
