package host

import (
	"testing"

	"bpfbench/bpf/host/syslock"
	"bpfbench/internal/child"
)

// testLock is the lock the tests run under, as root (child.RunTests).
var testLock *syslock.Lock

func TestMain(m *testing.M) { child.RunTests(m, &testLock) }
