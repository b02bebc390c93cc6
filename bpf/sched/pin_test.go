package sched

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestPinnedRestoresAffinity(t *testing.T) {
	var before, during, after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	err := Pinned(0, func() error { return unix.SchedGetaffinity(0, &during) })
	if err != nil {
		t.Fatal(err)
	}
	if during.Count() != 1 || !during.IsSet(0) {
		t.Errorf("inside Pinned(0) the thread may run on %d CPUs", during.Count())
	}
	// The goroutine may now be on any thread; all of them should have
	// the process's original mask again.
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("affinity after Pinned = %v, want %v", after, before)
	}
}
