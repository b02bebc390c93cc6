package bpf

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain holds the system-wide lock for the whole run when root, as the
// bench package's TestMain does. These tests load and attach XDP programs
// (TestFiller attaches 48), create namespaces and change sysctls; a bench
// run at the same time, such as the one `go test ./...` runs in parallel,
// would find them sharing its dispatcher and count them in its before and
// after snapshots. Helper processes (BPFBENCH_TEST_HELPER) take no lock of
// their own: the test that starts one hands it its lock, or tests Lock.
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 || os.Getenv("BPFBENCH_TEST_HELPER") != "" {
		os.Exit(m.Run())
	}
	unlock, err := Lock(5 * time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpf tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	unlock()
	os.Exit(code)
}
