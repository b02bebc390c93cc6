package harness

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestStage checks the remote stage's bookkeeping with a fake clock and
// counters: time after the last packet is not wall time, calls of other
// receivers (outside before/after) count for nothing, time spent waiting
// for the CPU is neither work nor idleness, and only a stage that lost
// frames and was slower than their sender is called the bottleneck.
func TestStage(t *testing.T) {
	var pkts uint64
	var work, wait int64
	now := time.Unix(0, 0)
	s := NewStage(func() (uint64, error) { return pkts, nil }, func() (int64, int64, error) { return work, wait, nil })
	s.Now = func() time.Time { return now }
	step := func(d time.Duration, p uint64, w, q int64) {
		now = now.Add(d)
		pkts += p
		work += w
		wait += q
	}
	// A call: 1000 packets in 10 µs, 6 µs of work and 2 µs waiting for the
	// CPU, then 5 µs of settling with nothing to do.
	if err := s.Before(); err != nil {
		t.Fatal(err)
	}
	step(4*time.Microsecond, 400, 4000, 0)
	if err := s.Poll(); err != nil {
		t.Fatal(err)
	}
	step(6*time.Microsecond, 600, 2000, 2000)
	if err := s.Poll(); err != nil {
		t.Fatal(err)
	}
	step(5*time.Microsecond, 0, 0, 0)
	if err := s.After(); err != nil {
		t.Fatal(err)
	}
	// Another receiver's call: the stage's counters move, but outside
	// before/after, and a poll there is ignored.
	step(time.Millisecond, 7, 7000, 7000)
	if err := s.Poll(); err != nil {
		t.Fatal(err)
	}
	if s.Pkts != 1000 || s.Work != 6000 || s.Wait != 2000 || s.Wall != 10000 {
		t.Errorf("pkts %d, work %d, wait %d, wall %d: want 1000, 6000, 2000, 10000", s.Pkts, s.Work, s.Wait, s.Wall)
	}
	if s.NsPerPkt() != 6 || s.BusyFrac() != 0.6 || s.WaitFrac() != 0.2 || math.Abs(s.IdleFrac()-0.2) > 1e-9 {
		t.Errorf("%v ns per packet, busy %v, waiting %v, idle %v: want 6, 0.6, 0.2, 0.2", s.NsPerPkt(), s.BusyFrac(), s.WaitFrac(), s.IdleFrac())
	}
	for _, c := range []struct {
		lost, senderNs float64
		want           bool
	}{
		{0.5, 5, true},    // losing, slower than the sender: the bottleneck
		{0.5, 7, false},   // losing, but faster than the sender
		{0, 5, false},     // kept up
		{0.005, 5, false}, // under MaxLostFrac
	} {
		if got := s.Bound(c.lost, c.senderNs); got != c.want {
			t.Errorf("lost %v, sender %v ns: bound %v, want %v", c.lost, c.senderNs, got, c.want)
		}
		if v := s.Words("x", 0, c.lost, c.senderNs, "here"); strings.HasPrefix(v, "REMOTE-BOUND") != c.want {
			t.Errorf("lost %v, sender %v ns: verdict %q", c.lost, c.senderNs, v)
		}
	}
	s.Reset()
	if s.Bound(0.5, 0) {
		t.Error("a stage that handled no packets is called the bottleneck")
	}
}
