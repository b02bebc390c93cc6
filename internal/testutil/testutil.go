// Package testutil holds what the suite's tests share: loading the XDP
// programs, and turning a setup's error and Close into a skip or failure
// and a cleanup. (The system-wide lock a test binary runs under is
// child.RunTests's.)
package testutil

import (
	"io"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/sched"
)

// A Requirer skips or fails tb by a setup's error, doing saying what the
// setup did: probe.Require, or a run's record (measure.Record.Require),
// which also keeps the reason for the run's summary.
type Requirer func(tb testing.TB, err error, doing string)

// Must is x, made by a setup that returned err: require skips or fails
// tb by err, and x is closed when tb ends, its Close's error failing tb.
// Closed last-in first-out with tb's other cleanups, so a setup's XDP
// links go before the namespace made before it.
func Must[T io.Closer](tb testing.TB, require Requirer, doing string, x T, err error) T {
	tb.Helper()
	require(tb, err, doing)
	tb.Cleanup(func() {
		if err := x.Close(); err != nil {
			tb.Error(err)
		}
	})
	return x
}

// LoadXDP loads progs/xdp.c's programs and closes them with tb.Cleanup.
func LoadXDP(tb testing.TB) *bpf.XDPObjects {
	tb.Helper()
	host.RequireRoot(tb)
	var objs bpf.XDPObjects
	if err := bpf.LoadXDPObjects(&objs, nil); err != nil {
		tb.Fatalf("load XDP programs: %v", err)
	}
	tb.Cleanup(func() { objs.Close() })
	return &objs
}

// LastCPU is the last CPU the process may run on, the suite's default
// measuring CPU (sched.PickCPU with -1).
func LastCPU() int {
	allowed, _ := sched.AllowedCPUs()
	cpu, err := sched.PickCPU(-1, allowed)
	if err != nil {
		return 0
	}
	return cpu
}

// Frame is a UDP frame of size bytes (bpf.UDPFrame), failing tb if it cannot be made.
func Frame(tb testing.TB, size int) []byte {
	tb.Helper()
	f, err := bpf.UDPFrame(size)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}
