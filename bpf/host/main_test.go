package host

import (
	"testing"

	"bpfbench/bpf/host/syslock"
	"bpfbench/internal/child"
)

// testLock is the lock the tests run under, as root (child.RunTests).
var testLock *syslock.Lock

// testJournal is the tests' journal of the sysctls they change, as the
// suite's TestMain keeps one for a run.
var testJournal = NewJournal()

func TestMain(m *testing.M) { child.RunTests(m, &testLock) }
