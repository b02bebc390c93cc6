package testrun_test

import (
	"math"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/internal/child"
	"bpfbench/internal/testutil"
)

func TestMain(m *testing.M) { child.RunTests(m, nil) }

func TestMeasure(t *testing.T) {
	objs := testutil.LoadXDP(t)
	// Held in the dispatcher: otherwise each call rebuilds it, and that
	// varying cost can exceed a 10000-run loop.
	h, err := rig.NewHolder(host.NewNetns(t), objs.Drop)
	testutil.Must(t, probe.Require, "dispatcher holder", h, err)
	l := &testrun.Loop{Prog: objs.Drop, Data: testutil.Frame(t, 64), Runs: objs.Runs, Prepare: h.Held(objs.Drop)}
	var before, after uint64
	objs.Runs.Get(&before)
	var s testrun.Sample
	err = sched.Pinned(0, func() (err error) {
		s, err = l.Measure(10000)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	objs.Runs.Get(&after)
	// The long call, the short call and the throwaway settling call, once
	// per attempt: a measurement the clocks disagreed on is taken again
	// (Rejected), and the kernel's EINTR restarts are re-run by cilium/ebpf
	// a number of times it does not say, so only the first is exact.
	attempts := uint64(1 + s.Rejected)
	if s.Disagreed {
		attempts--
	}
	if got, want := after-before, attempts*uint64(10000+2*testrun.ShortRepeat); got != want && s.Restarts == 0 {
		t.Errorf("program ran %d times, want %d (%d attempts, %d rejected)", got, want, attempts, s.Rejected)
	}
	if s.Repeat != 10000 || !(s.Ns > 0) || math.IsInf(s.Ns, 0) || s.FixedNs <= 0 {
		t.Errorf("implausible sample %+v", s)
	}
}

// TestLayoutsTakeTurns measures a loop with two more loads of its program
// six times, moving to the next layout after each: each load must run in
// two of the measurements, in turn, its own counter proving it.
func TestLayoutsTakeTurns(t *testing.T) {
	loads := []*bpf.XDPObjects{testutil.LoadXDP(t), testutil.LoadXDP(t), testutil.LoadXDP(t)}
	h, err := rig.NewHolder(host.NewNetns(t), loads[0].Drop)
	testutil.Must(t, probe.Require, "dispatcher holder", h, err)
	frame := testutil.Frame(t, 64)
	var loops []*testrun.Loop
	for _, objs := range loads {
		loops = append(loops, &testrun.Loop{Prog: objs.Drop, Data: frame, Runs: objs.Runs, Prepare: h.Held(objs.Drop)})
	}
	l := loops[0]
	l.Layouts = loops[1:]
	runs := func() []uint64 {
		n := make([]uint64, len(loads))
		for i, objs := range loads {
			if err := objs.Runs.Get(&n[i]); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	before := runs()
	err = sched.Pinned(0, func() error {
		for i := range 2 * len(loads) {
			b := runs()
			if _, err := l.Measure(10000); err != nil {
				return err
			}
			l.NextLayout()
			a := runs()
			for j := range loads {
				if ran := a[j] > b[j]; ran != (j == i%len(loads)) {
					t.Errorf("measurement %d: load %d ran %d times, want it to run only in measurement %d mod %d", i, j, a[j]-b[j], j, len(loads))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for j, n := range runs() {
		if n-before[j] < 2*10000 {
			t.Errorf("load %d ran %d times in all, want at least two measurements of 10000", j, n-before[j])
		}
	}
}
