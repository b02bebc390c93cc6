package host

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"bpfbench/bpf/host/syslock"
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

// RunTests runs a test binary's tests holding the system-wide lock for the
// whole run when root, as the bench package's TestMain does: the tests
// load and attach XDP programs, create namespaces and change sysctls, and a
// bench run at the same time (`go test ./...` runs packages in parallel)
// would find them sharing its dispatcher and count them in its snapshots.
// Helper processes (BPFBENCH_TEST_HELPER) take no lock of their own: the
// test that starts one hands it its lock, or tests the lock.
func RunTests(m *testing.M) {
	if !Privileged() || os.Getenv("BPFBENCH_TEST_HELPER") != "" {
		os.Exit(m.Run())
	}
	unlock, err := syslock.Take(5 * time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	unlock()
	os.Exit(code)
}
