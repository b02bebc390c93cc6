package bench

import (
	"errors"
	"fmt"
	"strings"

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
