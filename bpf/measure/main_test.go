package measure_test

import (
	"testing"

	"bpfbench/bpf/host"
)

func TestMain(m *testing.M) { host.RunTests(m) }
