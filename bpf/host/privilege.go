package host

import (
	"errors"
	"os"
	"testing"
)

// ErrNotRoot is why privileged benchmarks and tests skip: the one line
// they say, naming the command that would run them.
var ErrNotRoot = errors.New("bpfbench needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN): run `go test -exec sudo -run '^$' -bench . ./bench` (or ./... for the tests)")

// Privileged says the process may load BPF programs, create namespaces and
// set sysctls.
func Privileged() bool { return os.Geteuid() == 0 }

// RequireRoot skips tb with ErrNotRoot unless the process is privileged.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if !Privileged() {
		tb.Skip(ErrNotRoot)
	}
}
