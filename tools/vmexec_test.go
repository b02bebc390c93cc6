// Package tools_test tests the shell tools of tools/ that CI leans on.
package tools_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVmexecStopsAGuestKVMCannotRun: where QEMU reports a KVM internal
// error (nested virtualisation that cannot emulate the kernel's
// instructions), tools/vmexec stops the guest and says to run it under
// TCG, instead of waiting out its timeout. A fake qemu-system-x86_64 says
// what QEMU says and then waits, as QEMU does.
func TestVmexecStopsAGuestKVMCannotRun(t *testing.T) {
	for _, tool := range []string{"cpio", "busybox", "file"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("tools/vmexec needs %s: make vmdeps installs it", tool)
		}
	}
	// As vmexec checks it: a guest's busybox runs without libraries.
	if out, _ := exec.Command("file", "-L", "/bin/busybox").Output(); !strings.Contains(string(out), "statically linked") {
		if bb, _ := exec.LookPath("busybox"); bb != "" {
			out, _ = exec.Command("file", "-L", bb).Output()
		}
		if !strings.Contains(string(out), "statically linked") {
			t.Skip("tools/vmexec needs a static busybox: make vmdeps installs busybox-static")
		}
	}
	dir := t.TempDir()
	fake := "#!/bin/sh\necho 'KVM internal error. Suberror: 1' >&2\necho 'emulation failure' >&2\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(dir, "qemu-system-x86_64"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	// A bzImage as far as vmexec reads one: the header's pointer to the
	// version string (Documentation/arch/x86/boot.rst).
	img := make([]byte, 0x600)
	binary.LittleEndian.PutUint16(img[0x20e:], 0x200)
	copy(img[0x400:], "6.99.0-fake (nobody) #1\x00")
	kernel := filepath.Join(dir, "vmlinuz")
	if err := os.WriteFile(kernel, img, 0o644); err != nil {
		t.Fatal(err)
	}
	// Far less than the timeout vmexec is given: reaching it means
	// vmexec waited for the timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./vmexec", "/bin/true")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "KERNEL="+kernel,
		"VMEXEC_ACCEL=kvm", "VMEXEC_MODULES=", "VMEXEC_TOOLS=", "VMEXEC_TIMEOUT=600")
	// At the deadline, end vmexec and all it started (the fake QEMU's
	// sleep among them), and stop waiting for their output.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("vmexec still waited after %v: it did not stop the guest\n%s", 2*time.Minute, out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("vmexec: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"KVM cannot run this guest", "emulation failure", "VMEXEC_ACCEL=tcg"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("vmexec's message lacks %q:\n%s", want, out)
		}
	}
}
