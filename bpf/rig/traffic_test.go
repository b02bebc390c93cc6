package rig

import (
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// TestTrafficCatchesVanishedFrames removes what makes veth accept
// redirected frames (an XDP program or GRO on the receiving end): test_run
// still succeeds, and the counters, not its return value, must say that
// nothing arrived.
func TestTrafficCatchesVanishedFrames(t *testing.T) {
	host.RequireRoot(t)
	tr, err := NewTraffic(2)
	testutil.Must(t, probe.Require, "traffic rig", tr, err)
	r := Receiver{Action: Drop, Mode: bpf.XDPGeneric, Prog: RxDrop}
	err = sched.Pinned(testutil.LastCPU(), func() error {
		if err := tr.Set(r); err != nil {
			return err
		}
		if err := tr.NS.Do(func() error { return setGRO(tr.Pair.B.Name, false) }); err != nil {
			return err
		}
		c, err := tr.Run(r, 256)
		if err != nil {
			return fmt.Errorf("test_run failed, but it should report success: %w", err)
		}
		if c.Gen < 256 || c.Received() != 0 {
			return fmt.Errorf("generated %d, received %d: want 256 or more made and none received", c.Gen, c.Received())
		}
		_, _, err = tr.Measure(r, 20_000, &ShortCalls{})
		var nt *NoTrafficError
		if !errors.As(err, &nt) {
			return fmt.Errorf("Measure returned %v, want a NoTrafficError", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTrafficBenchAccounts measures a short interleaved row and checks that
// its totals add up and that it measured the generator and the reference.
func TestTrafficBenchAccounts(t *testing.T) {
	host.RequireRoot(t)
	tr, err := NewTraffic(2)
	testutil.Must(t, probe.Require, "traffic rig", tr, err)
	r := Receiver{Action: Tx, Mode: bpf.XDPNative, Prog: RxDrop}
	ref := Receiver{Action: Drop, Mode: bpf.XDPNative, Prog: RxDrop}
	o := measure.BenchOptions{CPU: testutil.LastCPU(), CallTime: time.Millisecond, Interleave: true}
	res := benchFrames(t, 200_000, tr, r, &ref, o)
	if !res.HaveGen || !res.HaveDelta || res.Calls < 1 {
		t.Fatalf("interleaved bench lacks the generator or the reference: %+v", res)
	}
	tot := res.Total
	if tot.Gen < 200_000 {
		t.Errorf("%d rounds made %d frames, asked for 200000", res.Calls, tot.Gen)
	}
	if got := tot.Gen - tot.Returned(); res.Lost != got {
		t.Errorf("lost %d, but generated %d and returned %d", res.Lost, tot.Gen, tot.Returned())
	}
	if res.RxBound != (res.RxNs > res.GenNs && res.LostFrac < MaxLostFrac) {
		t.Errorf("rx-bound %v disagrees with rx %.1f ns, gen %.1f ns, lost %.3f", res.RxBound, res.RxNs, res.GenNs, res.LostFrac)
	}
	if res.Ns <= 0 || res.PPS <= 0 {
		t.Errorf("ns/pkt %v, pps %v", res.Ns, res.PPS)
	}

	plain := benchFrames(t, 50_000, tr, r, &ref, measure.BenchOptions{CPU: o.CPU, CallTime: o.CallTime})
	if plain.HaveGen || plain.HaveDelta || plain.RxBound {
		t.Errorf("plain mode measured more than the receiver: %+v", plain)
	}
}

// benchFrames measures r, with ref, as a row of a family (measure.Family)
// for -test.benchtime=<frames>x (measure.BenchTime), and returns its
// result, failing t when it failed.
func benchFrames(t *testing.T, frames int, tr *Traffic, r Receiver, ref *Receiver, o measure.BenchOptions) TrafficResult {
	t.Helper()
	f := flag.Lookup("test.benchtime")
	old := f.Value.String()
	if err := f.Value.Set(fmt.Sprintf("%dx", frames)); err != nil {
		t.Fatal(err)
	}
	defer f.Value.Set(old)
	var res TrafficResult
	ran := false
	testing.Benchmark(func(b *testing.B) {
		var summary func(measure.Result) TrafficResult
		measure.Family(b, o, []measure.Row{{
			Name: "row",
			Start: func(b *testing.B) measure.Job {
				w, sum := tr.Job(r, ref, o.Interleave, nil)
				summary = sum
				return w
			},
			Report: func(b *testing.B, m measure.Result) []measure.Figure {
				res = summary(m)
				ran = true
				return res.Figures(r)
			},
		}})
	})
	if !ran {
		t.Fatalf("a row of %d frames failed", frames)
	}
	return res
}

// TestTrafficFullDispatcher attaches the receiver behind a full dispatcher,
// and with one filler fewer, and checks that frames still reach it and that
// the right number of XDP programs is attached.
func TestTrafficFullDispatcher(t *testing.T) {
	host.RequireRoot(t)
	tr, err := NewTraffic(2)
	testutil.Must(t, probe.Require, "traffic rig", tr, err)
	r := Receiver{Action: Drop, Mode: bpf.XDPNative, Prog: RxDrop}
	r.Fill = tr.FullFill(r)
	if got := r.Fill + 2; got != DispatcherMax {
		t.Fatalf("fillers and generators make %d programs, want %d", got, DispatcherMax)
	}
	for _, fill := range []int{r.Fill, r.Fill - 1, r.Fill} {
		r.Fill = fill
		err := sched.Pinned(testutil.LastCPU(), func() error {
			if err := tr.Set(r); err != nil {
				return err
			}
			c, err := tr.Run(r, 256)
			if err != nil {
				return err
			}
			if c.Received() != c.Gen {
				return fmt.Errorf("fill %d: received %d of %d", fill, c.Received(), c.Gen)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := countXDPLinks(t); n < fill+3 {
			t.Errorf("fill %d: %d XDP links attached, want at least %d (fillers, generators, receiver)", fill, n, fill+3)
		}
	}
}

func countXDPLinks(t *testing.T) int {
	t.Helper()
	n := 0
	it := new(link.Iterator)
	for it.Next() {
		info, err := it.Link.Info()
		if err == nil && info.Type == link.XDPType {
			n++
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReceiverCheck(t *testing.T) {
	for _, r := range []Receiver{
		{Action: "abort", Mode: bpf.XDPNative, Prog: RxDrop},
		{Action: Drop, Mode: "offload", Prog: RxDrop},
		{Action: Drop, Mode: bpf.XDPNative, Prog: "jump"},
		{Action: Drop, Mode: bpf.XDPNative, Prog: RxDrop, Fill: DispatcherMax + 1},
		{Action: Drop, Prog: RxDrop},
		{Action: Drop, Mode: bpf.XDPNative, Prog: RxDrop, Ext: &Ext{Name: "own", Prog: &ebpf.Program{}}},
	} {
		if err := r.check(); err == nil {
			t.Errorf("%+v: accepted", r)
		}
	}
	for _, r := range []Receiver{
		{},
		{Action: Pass, Mode: bpf.XDPGeneric, Prog: RxTouch},
		{Action: Pass, Mode: bpf.XDPNative, Prog: RxDrop, Ext: &Ext{Name: "hooks"}},
		{Mode: bpf.XDPNative, Ext: &Ext{Name: "own", Prog: &ebpf.Program{}}},
	} {
		if err := r.check(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	if !(Receiver{}).GeneratorOnly() || (Receiver{Mode: bpf.XDPNative, Ext: &Ext{Prog: &ebpf.Program{}}}).GeneratorOnly() {
		t.Error("GeneratorOnly: want true for the zero Receiver only")
	}
}

// TestShortCallsOutlier feeds Measure's arithmetic one short call charged
// for time not its own: the long call after it measures nothing (Measure
// takes the pair again), and two short calls later the median has left it
// behind.
func TestShortCallsOutlier(t *testing.T) {
	r := Receiver{}
	call := func(cpu int64, frames uint64) Call {
		var c Call
		c.CPU, c.Gen = cpu, frames
		return c
	}
	long := call(1_000_000, 20_000)
	var s ShortCalls
	for i, c := range []struct {
		short    Call
		positive bool
	}{
		{call(3_000_000, 256), false}, // the outlier alone
		{call(10_000, 256), false},    // the median of two is the larger
		{call(12_000, 256), true},     // the median of three is a true short call
	} {
		cpu, pkts := s.add(c.short, long, r)
		if pkts != 20_000-256 {
			t.Errorf("call %d: %v packets beyond the short calls, want %d", i, pkts, 20_000-256)
		}
		if (cpu > 0) != c.positive {
			t.Errorf("call %d: %v ns beyond the short calls, want positive %v", i, cpu, c.positive)
		}
		if c.positive && cpu != 1_000_000-12_000 {
			t.Errorf("call %d: %v ns beyond the short calls, want %d", i, cpu, 1_000_000-12_000)
		}
	}
}
