package testrun

import (
	"errors"
	"testing"

	"bpfbench/bpf"
	"bpfbench/internal/testutil"
)

func TestMeasureDetectsMissingRuns(t *testing.T) {
	objs := testutil.LoadXDP(t)
	var other bpf.DispatcherObjects
	if err := bpf.LoadDispatcherObjects(&other, nil); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// A counter the measured program never increments: what a benchmark
	// sees when it measures a program that did not run.
	l := &Loop{Prog: objs.Drop, Data: testutil.Frame(t, 64), Runs: other.Runs}
	_, err := l.Measure(1000)
	if !errors.Is(err, ErrRunCount) {
		t.Fatalf("Measure with a counter that does not count: got %v, want ErrRunCount", err)
	}
}

func TestMeasureErrors(t *testing.T) {
	objs := testutil.LoadXDP(t)
	l := &Loop{Prog: objs.Drop, Data: testutil.Frame(t, 64), Runs: objs.Runs}
	if _, err := l.Measure(ShortRepeat); err == nil {
		t.Error("Measure(ShortRepeat) succeeded; the slope needs a longer loop")
	}
	boom := errors.New("boom")
	l.Prepare = func() error { return boom }
	if _, err := l.Measure(1000); !errors.Is(err, boom) {
		t.Errorf("Measure with a failing Prepare: got %v, want it wrapped", err)
	}
	l.Prepare = nil
	// More than a page plus MAX_SKB_FRAGS fragments: every kernel refuses
	// it (EMSGSIZE before 5.18, ENOMEM since XDP test_run takes
	// fragments). A frame shorter than an Ethernet header would not do:
	// kernels before 5.18 run XDP programs on it.
	l.Data = make([]byte, 1<<20)
	if _, err := l.Measure(1000); err == nil {
		t.Error("Measure on a 1 MiB packet succeeded; the kernel should refuse it")
	}
}

func TestFixedCostIsRecentMedian(t *testing.T) {
	var l Loop
	for i, tc := range []struct{ short, want int64 }{
		{10, 10},
		{900, 900}, // of {10, 900} the upper middle
		{12, 12},
		{11, 12},
		{5000, 12}, // one slow call does not move it
	} {
		if got := l.fixedCost(tc.short); got != tc.want {
			t.Errorf("call %d: fixedCost(%d) = %d, want %d", i, tc.short, got, tc.want)
		}
	}
	for range 100 {
		l.fixedCost(7)
	}
	if got := l.fixedCost(7); got != 7 || l.recent.Len() != 31 {
		t.Errorf("after many calls: median %d over %d, want 7 over 31", got, l.recent.Len())
	}
}

// TestLostTime: a call whose thread clock counted less than minCPUShare of
// its wall time lost time; one that counted all of it, or more (a clock
// read's own jitter), did not.
func TestLostTime(t *testing.T) {
	for _, tc := range []struct {
		cpu, wall int64
		lost      bool
	}{
		{59256, 296813, true}, // measured: a bpf_loop call on the Intel Xeon 6/167 guest
		{258380, 260000, false},
		{1000, 1000, false},
		{1001, 1000, false},
		{899, 1000, true},
	} {
		if got := (callTime{CPU: tc.cpu, Wall: tc.wall}).lostTime(); got != tc.lost {
			t.Errorf("thread %d ns of wall %d ns: lost %v, want %v", tc.cpu, tc.wall, got, tc.lost)
		}
	}
}
