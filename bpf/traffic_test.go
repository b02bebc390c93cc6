package bpf

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
)

// lastCPU is where the traffic tests generate.
func lastCPU() int { return runtime.NumCPU() - 1 }

// TestTrafficCountsEveryFrame sends one ring's worth of frames (veth's ring
// holds 256, so none can be dropped for want of room) through each kind of
// receiver and checks that the counters account for every frame: made by
// the generator, seen by the receiver on the generating CPU's queue, and
// for tx and redirect seen again by the sink.
func TestTrafficCountsEveryFrame(t *testing.T) {
	hsRequireRoot(t)
	tr := NewTraffic(t, 2)
	cpu := lastCPU()
	const frames = 256
	for _, r := range []Receiver{
		{Action: "drop", Mode: "native", Prog: "drop"},
		{Action: "pass", Mode: "native", Prog: "parse"},
		{Action: "tx", Mode: "native", Prog: "touch"},
		{Action: "redirect", Mode: "native", Prog: "drop"},
		{Action: "drop", Mode: "generic", Prog: "drop"},
		{Action: "pass", Mode: "generic", Prog: "drop"},
		{Action: "tx", Mode: "generic", Prog: "parse"},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", r.Action, r.Mode, r.Prog), func(t *testing.T) {
			var c Call
			err := Pinned(cpu, func() error {
				if err := tr.Set(r); err != nil {
					return err
				}
				var err error
				c, err = tr.Run(r, frames)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.Restarts == 0 && c.Gen != frames {
				t.Errorf("generator made %d frames, asked for %d", c.Gen, frames)
			}
			if c.Received() != c.Gen {
				t.Errorf("receiver saw %d of %d frames\n%s", c.Received(), c.Gen, QueueTable(c.RX))
			}
			if c.RX[0][cpu]+c.RX[1][cpu] != c.Received() {
				t.Errorf("frames received on other CPUs than the generator's (%d):\n%s", cpu, QueueTable(c.RX))
			}
			// veth picks the queue by the sending CPU; generic XDP sees the
			// queue the skb recorded.
			if q := cpu % 2; r.Mode == "native" && c.RX[q][cpu] != c.Received() {
				t.Errorf("native: frames not all on queue %d of CPU %d:\n%s", q, cpu, QueueTable(c.RX))
			}
			want := uint64(0)
			if r.echoes() {
				want = c.Received()
			}
			if c.Returned() != want {
				t.Errorf("sink saw %d frames, want %d", c.Returned(), want)
			}
			if c.Delivered(r) != c.Gen {
				t.Errorf("delivered %d of %d", c.Delivered(r), c.Gen)
			}
			if c.CPU <= 0 {
				t.Errorf("call took %d ns of CPU", c.CPU)
			}
		})
	}
}

// TestTrafficCatchesVanishedFrames removes what makes veth accept
// redirected frames (an XDP program or GRO on the receiving end): test_run
// still succeeds, and the counters, not its return value, must say that
// nothing arrived.
func TestTrafficCatchesVanishedFrames(t *testing.T) {
	hsRequireRoot(t)
	tr := NewTraffic(t, 2)
	r := Receiver{Action: "drop", Mode: "generic", Prog: "drop"}
	err := Pinned(lastCPU(), func() error {
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
		_, err = tr.Measure(r, 20_000)
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

// TestTrafficBenchAccounts runs a short interleaved Bench and checks that
// its totals add up and that it measured the generator and the reference.
func TestTrafficBenchAccounts(t *testing.T) {
	hsRequireRoot(t)
	tr := NewTraffic(t, 2)
	r := Receiver{Action: "tx", Mode: "native", Prog: "drop"}
	ref := Receiver{Action: "drop", Mode: "native", Prog: "drop"}
	o := BenchOptions{CPU: lastCPU(), CallTime: time.Millisecond, Interleave: true}
	res, err := tr.Bench(200_000, r, &ref, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.HaveGen || !res.HaveDelta || res.Rounds < 1 {
		t.Fatalf("interleaved bench lacks the generator or the reference: %+v", res)
	}
	tot := res.Total
	if tot.Gen < 200_000 {
		t.Errorf("%d rounds made %d frames, asked for 200000", res.Rounds, tot.Gen)
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

	plain, err := tr.Bench(50_000, r, &ref, BenchOptions{CPU: o.CPU, CallTime: o.CallTime}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.HaveGen || plain.HaveDelta || plain.RxBound {
		t.Errorf("plain mode measured more than the receiver: %+v", plain)
	}
}

// TestTrafficFullDispatcher attaches the receiver behind a full dispatcher,
// and with one filler fewer, and checks that frames still reach it and that
// the right number of XDP programs is attached.
func TestTrafficFullDispatcher(t *testing.T) {
	hsRequireRoot(t)
	tr := NewTraffic(t, 2)
	r := Receiver{Action: "drop", Mode: "native", Prog: "drop"}
	r.Fill = tr.FullFill(r)
	if got := r.Fill + 2; got != DispatcherMax {
		t.Fatalf("fillers and generators make %d programs, want %d", got, DispatcherMax)
	}
	for _, fill := range []int{r.Fill, r.Fill - 1, r.Fill} {
		r.Fill = fill
		err := Pinned(lastCPU(), func() error {
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
		{Action: "abort", Mode: "native", Prog: "drop"},
		{Action: "drop", Mode: "offload", Prog: "drop"},
		{Action: "drop", Mode: "native", Prog: "jump"},
		{Action: "drop", Mode: "native", Prog: "drop", Fill: DispatcherMax + 1},
	} {
		if err := r.check(); err == nil {
			t.Errorf("%+v: accepted", r)
		}
	}
	if err := (Receiver{}).check(); err != nil {
		t.Errorf("generator-only receiver: %v", err)
	}
}

func TestFramesFor(t *testing.T) {
	if f := framesFor(100, 40, 4*time.Millisecond); f != trafficShort+256*TrafficBatch {
		t.Errorf("framesFor(100x) = %d, want the minimum", f)
	}
	if f := framesFor(1e9, 40, 4*time.Millisecond); f != 100_000 {
		t.Errorf("framesFor(4ms at 40ns) = %d, want 100000", f)
	}
}
