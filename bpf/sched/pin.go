package sched

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Elsewhere runs fn on a thread bound to another CPU than the calling
// thread's, when the caller is pinned to one. What the kernel defers from
// attaching and detaching XDP programs (RCU callbacks, lazy by default
// since 6.9, and page pool teardown on veth) runs on the CPU that queued
// it; queued from the measuring CPU it landed in later measurements, at
// random, as tens of ns/op.
func Elsewhere(fn func() error) error {
	var cur unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cur); err != nil || cur.Count() != 1 {
		return fn()
	}
	for _, cpu := range allowed {
		if !cur.IsSet(cpu) {
			errc := make(chan error, 1)
			go func() { errc <- Pinned(cpu, fn) }()
			return <-errc
		}
	}
	return fn()
}

// Pinned runs fn on a locked OS thread bound to cpu, and restores the
// thread's CPU affinity afterwards so the Go scheduler gets its thread back
// as it was.
func Pinned(cpu int, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to cpu %d: %w", cpu, err)
	}
	defer unix.SchedSetaffinity(0, &old)
	return fn()
}
