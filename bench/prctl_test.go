package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// specControl is a per-task speculation control of prctl(2)
// PR_SET_SPECULATION_CTRL.
type specControl struct {
	name  string // the variant's spec= value
	which int    // PR_SPEC_*
	cname string // the constant, for messages
	boot  string // the boot option that offers it per task
}

var specControls = []*specControl{
	// STIBP for the task (and IBPB when switching to it): indirect branch
	// prediction no longer shared with the sibling thread.
	{"indirect-branch", unix.PR_SPEC_INDIRECT_BRANCH, "PR_SPEC_INDIRECT_BRANCH", "spectre_v2_user=prctl|seccomp"},
	// SSBD while the task runs, kernel code included: loads wait for
	// older stores' addresses.
	{"store-bypass", unix.PR_SPEC_STORE_BYPASS, "PR_SPEC_STORE_BYPASS", "spec_store_bypass_disable=prctl|seccomp"},
}

// getSpec returns PR_GET_SPECULATION_CTRL for c on the calling thread.
func getSpec(c *specControl) (int, error) {
	r, err := unix.PrctlRetInt(unix.PR_GET_SPECULATION_CTRL, uintptr(c.which), 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("prctl(PR_GET_SPECULATION_CTRL, %s): %w", c.cname, err)
	}
	return r, nil
}

func setSpec(c *specControl, value int) error {
	if err := unix.Prctl(unix.PR_SET_SPECULATION_CTRL, uintptr(c.which), uintptr(value), 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SPECULATION_CTRL, %s, %s): %w (%s)", c.cname, specValueName(value), err, errnoName(err))
	}
	return nil
}

// specValueName spells out a PR_GET_SPECULATION_CTRL result.
func specValueName(v int) string {
	if v == unix.PR_SPEC_NOT_AFFECTED {
		return "PR_SPEC_NOT_AFFECTED"
	}
	var names []string
	for _, b := range []struct {
		bit  int
		name string
	}{
		{unix.PR_SPEC_PRCTL, "PR_SPEC_PRCTL"}, {unix.PR_SPEC_ENABLE, "PR_SPEC_ENABLE"},
		{unix.PR_SPEC_DISABLE, "PR_SPEC_DISABLE"}, {unix.PR_SPEC_FORCE_DISABLE, "PR_SPEC_FORCE_DISABLE"},
		{unix.PR_SPEC_DISABLE_NOEXEC, "PR_SPEC_DISABLE_NOEXEC"},
	} {
		if v&b.bit != 0 {
			names = append(names, b.name)
			v &^= b.bit
		}
	}
	if v != 0 {
		names = append(names, fmt.Sprintf("%#x", v))
	}
	return strings.Join(names, "|")
}

func errnoName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return "not an errno"
}

// specAvailable tells why control c cannot be changed per task on this
// kernel, or "" when it can. It tries the change on the calling (locked)
// thread, and undoes it if it worked.
func specAvailable(c *specControl) (string, error) {
	prev, err := getSpec(c)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENODEV) {
		return fmt.Sprintf("the kernel has no per-task control %s: %v (%s)", c.cname, err, errnoName(err)), nil
	}
	if err != nil {
		return "", err
	}
	if prev == unix.PR_SPEC_NOT_AFFECTED {
		return fmt.Sprintf("the CPU is not affected by what %s controls (PR_GET_SPECULATION_CTRL: PR_SPEC_NOT_AFFECTED): nothing to measure", c.cname), nil
	}
	if prev&unix.PR_SPEC_DISABLE != 0 || prev&unix.PR_SPEC_FORCE_DISABLE != 0 {
		return fmt.Sprintf("%s is already disabled for this task (PR_GET_SPECULATION_CTRL: %s): nothing to compare", c.cname, specValueName(prev)), nil
	}
	if err := setSpec(c, unix.PR_SPEC_DISABLE); err != nil {
		if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ERANGE) || errors.Is(err, unix.EINVAL) {
			return fmt.Sprintf("the kernel offers no per-task control %s: %v; PR_GET_SPECULATION_CTRL says %s (it needs %s)",
				c.cname, err, specValueName(prev), c.boot), nil
		}
		return "", err
	}
	return "", setSpec(c, unix.PR_SPEC_ENABLE)
}

// specState is what the measuring thread's speculation controls were
// before the family, and which of them this kernel offers per task.
type specState struct {
	prev        map[*specControl]int
	unavailable map[*specControl]string
}

// specState reads the controls of the calling thread, which must be
// locked, and fails b when one cannot even be read.
func (f *mitigationsFamily) specState(b *testing.B) *specState {
	b.Helper()
	s := &specState{prev: map[*specControl]int{}, unavailable: map[*specControl]string{}}
	for _, c := range specControls {
		why, err := specAvailable(c)
		if err != nil {
			b.Fatal(err)
		}
		if why != "" {
			s.unavailable[c] = why
			continue
		}
		prev, err := getSpec(c)
		if err != nil {
			b.Fatal(err)
		}
		s.prev[c] = prev
	}
	return s
}

// set is a Prepare that disables control c (none: nil) on the calling
// thread and enables every other control the kernel offers, so that a
// loop runs with only its own row's control, whichever row ran before it.
func (s *specState) set(c *specControl) func() error {
	if len(s.prev) == 0 {
		return nil
	}
	return func() error {
		for _, d := range specControls {
			if _, ok := s.prev[d]; !ok {
				continue
			}
			value := unix.PR_SPEC_ENABLE
			if d == c {
				value = unix.PR_SPEC_DISABLE
			}
			if err := setSpec(d, value); err != nil {
				return err
			}
			if got, err := getSpec(d); err != nil {
				return err
			} else if got&value == 0 {
				return fmt.Errorf("%s reads %s after setting %s", d.cname, specValueName(got), specValueName(value))
			}
		}
		return nil
	}
}

// restore puts the calling thread's controls back as they were.
func (s *specState) restore() error {
	for c, prev := range s.prev {
		if err := setSpec(c, unix.PR_SPEC_ENABLE); err != nil {
			return fmt.Errorf("put back %s on the measuring thread: %w", c.cname, err)
		}
		if now, err := getSpec(c); err != nil || now != prev {
			return fmt.Errorf("%s on the measuring thread is %s after restoring, was %s: %v", c.cname, specValueName(now), specValueName(prev), err)
		}
	}
	return nil
}
