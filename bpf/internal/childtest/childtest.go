// Package childtest is what the tests that run their own binary again
// as a helper child share: starting it with the system lock handed over,
// waiting for it to say it is ready, and ending it.
package childtest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"bpfbench/bpf/host/syslock"
)

// Start starts this test binary again, running only TestHelperProcess
// with BPFBENCH_TEST_HELPER=mode and env, handing it lock (when not nil)
// as the system lock, killed if the test process dies. It returns the
// command, its stdout and what it writes on stderr. The caller registers
// Kill (and whatever it repairs after the child) in a cleanup, then calls
// WaitReady.
func Start(t testing.TB, mode string, lock *os.File, env ...string) (*exec.Cmd, io.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "BPFBENCH_TEST_HELPER="+mode)
	cmd.Env = append(cmd.Env, env...)
	if lock != nil {
		cmd.ExtraFiles = []*os.File{lock}
		cmd.Env = append(cmd.Env, syslock.FDEnv+"=3")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, &stderr
}

// Kill ends a child that is still running and reaps it.
func Kill(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// ReadyPrefix starts the line a helper child prints on stdout once it
// holds what the test needs of it.
const ReadyPrefix = "BPFBENCH-READY"

// WaitReady reads cmd's stdout (out) until the child prints its ready
// line, and returns the rest of that line. It fails t when the child
// exits first, or is not ready after a minute, with what it printed.
func WaitReady(t testing.TB, cmd *exec.Cmd, out io.Reader, stderr *bytes.Buffer, mode string) string {
	t.Helper()
	ready := make(chan string, 1)
	var stdout bytes.Buffer
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, ReadyPrefix); ok {
				ready <- strings.TrimSpace(rest)
				break
			}
			stdout.WriteString(line + "\n")
		}
		close(ready)
		io.Copy(io.Discard, out)
	}()
	select {
	case r, ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("helper %s exited before it was ready:\n%s%s", mode, stdout.String(), stderr.String())
		}
		return r
	case <-time.After(60 * time.Second):
		t.Fatalf("helper %s not ready after 60s:\n%s%s", mode, stdout.String(), stderr.String())
	}
	return ""
}
