// Package childtest is what the tests that run their own binary again
// as a helper child share: waiting for the child to say it is ready.
package childtest

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

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
