package measure_test

import (
	"math"
	"testing"

	"bpfbench/bpf/host"
	"bpfbench/bpf/internal/testutil"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
)

func TestMain(m *testing.M) { host.RunTests(m) }

func TestMeasure(t *testing.T) {
	objs := testutil.LoadXDP(t)
	// Held in the dispatcher: otherwise each call rebuilds it, and that
	// varying cost can exceed a 10000-run loop.
	h := rig.NewHolder(t, host.NewNetns(t), objs.Drop)
	l := &measure.Loop{Prog: objs.Drop, Data: testutil.Frame(t, 64), Runs: objs.Runs, Prepare: h.Held(objs.Drop)}
	var before, after uint64
	objs.Runs.Get(&before)
	var s measure.Sample
	err := measure.Pinned(0, func() (err error) {
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
	if got, want := after-before, attempts*uint64(10000+2*measure.ShortRepeat); got != want && s.Restarts == 0 {
		t.Errorf("program ran %d times, want %d (%d attempts, %d rejected)", got, want, attempts, s.Rejected)
	}
	if s.Repeat != 10000 || !(s.Ns > 0) || math.IsInf(s.Ns, 0) || s.FixedNs <= 0 {
		t.Errorf("implausible sample %+v", s)
	}
}
