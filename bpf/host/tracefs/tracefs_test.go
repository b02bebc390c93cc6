package tracefs

import (
	"slices"
	"testing"

	"bpfbench/bpf/host"
)

// TestDo: inside Do tracefs is reachable; after it, the
// process's mounts are as they were.
func TestDo(t *testing.T) {
	host.RequireRoot(t)
	before, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}
	reached := false
	if err := Do(func() error { reached = reachable(); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reached {
		t.Error("tracefs was not reachable inside Do")
	}
	after, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("tracefs mounts %v before, %v after", before, after)
	}
}
