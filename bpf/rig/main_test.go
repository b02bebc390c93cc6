package rig

import (
	"testing"

	"bpfbench/internal/child"
)

func TestMain(m *testing.M) { child.RunTests(m, nil) }
