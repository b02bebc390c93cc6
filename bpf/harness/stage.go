package harness

import (
	"errors"
	"fmt"
	"os"
	"time"

	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
)

// A Stage meters the part of an attach run that happens on the other CPU
// (the AF_XDP application, the cpumap kthread, the UDP receiving thread)
// over the generator calls of one receiver (bpf.Ext's Before and After): the
// packets it handled, the CPU time it worked, the time it waited, runnable,
// for a CPU other tasks held, and the wall time from the start of each call
// to the last packet it handled (so that the wait for frames to settle is
// not counted). What is left of the wall time it was idle: asleep (a
// kthread, a receive loop in poll) or spinning with nothing to do (an
// AF_XDP application).
type Stage struct {
	// Read returns running counts: packets handled, ns worked, ns waited
	// for a CPU (NewStage makes it).
	Read func() (pkts uint64, work, wait int64, err error)
	// now is the wall clock (nil: time.Now).
	Now func() time.Time

	p0     uint64 // at the start of the current call
	w0, q0 int64
	t0     time.Time // zero outside a call
	last   uint64
	lastAt time.Time

	Pkts             uint64 // totals since reset
	Work, Wait, Wall int64
}

// NewStage is the stage whose packets count counts and whose CPU time
// times reads (a remote CPU's work and wait, as sched reads them): the
// one accounting of the families that end on a second CPU.
func NewStage(count func() (uint64, error), times func() (work, wait int64, err error)) *Stage {
	return &Stage{Read: func() (uint64, int64, int64, error) {
		n, err := count()
		if err != nil {
			return 0, 0, 0, err
		}
		work, wait, err := times()
		return n, work, wait, err
	}}
}

func (s *Stage) Before() error {
	p, work, wait, err := s.Read()
	if err != nil {
		return err
	}
	s.p0, s.w0, s.q0, s.t0 = p, work, wait, s.clock()
	s.last, s.lastAt = p, s.t0
	return nil
}

// Poll notes when the packet count last moved.
func (s *Stage) Poll() error {
	if s.t0.IsZero() {
		return nil
	}
	p, _, _, err := s.Read()
	if err != nil {
		return err
	}
	if p != s.last {
		s.last, s.lastAt = p, s.clock()
	}
	return nil
}

// Watch wraps a count of delivered frames (bpf.Ext.Delivered) so that the
// rig's readings while frames settle also note the stage's progress.
func (s *Stage) Watch(delivered func() (uint64, error)) func() (uint64, error) {
	return func() (uint64, error) {
		if err := s.Poll(); err != nil {
			return 0, err
		}
		return delivered()
	}
}

func (s *Stage) After() error {
	if err := s.Poll(); err != nil {
		return err
	}
	p, work, wait, err := s.Read()
	if err != nil {
		return err
	}
	s.Pkts += p - s.p0
	s.Work += work - s.w0
	s.Wait += wait - s.q0
	s.Wall += int64(s.lastAt.Sub(s.t0))
	s.t0 = time.Time{}
	return nil
}

func (s *Stage) clock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Stage) Reset() { s.Pkts, s.Work, s.Wait, s.Wall = 0, 0, 0, 0 }

func (s *Stage) NsPerPkt() float64 { return float64(s.Work) / float64(max(s.Pkts, 1)) }

func (s *Stage) share(ns int64) float64 { return float64(ns) / float64(max(s.Wall, 1)) }

// BusyFrac is the share of the time the stage worked; WaitFrac the share
// it waited for a CPU; IdleFrac what is left, the share it had nothing to
// do.
func (s *Stage) BusyFrac() float64 { return s.share(s.Work) }

func (s *Stage) WaitFrac() float64 { return s.share(s.Wait) }

func (s *Stage) IdleFrac() float64 { return max(0, 1-s.BusyFrac()-s.WaitFrac()) }

// Bound reports whether the stage limited the run: it lost at least
// bpf.MaxLostFrac of the frames offered to it, and it needs more CPU time
// per packet than the generating CPU spends making and handing one over
// (senderNs, the rig's ns/pkt), so that frames came faster than it could
// take them even had it run all the time. (A stage that lost frames
// although it was faster lost them to wake-up latency or bursts.) Its
// CPU time per packet is then its rate, per second of its CPU.
func (s *Stage) Bound(lostFrac, senderNs float64) bool {
	return s.Pkts > 0 && lostFrac >= rig.MaxLostFrac && s.NsPerPkt() > senderNs
}

// Words says what the stage was, for stderr: the bottleneck
// (remote-pps is its rate), a stage that kept up (no rate), or one that
// lost frames although it was the faster side (no rate either). where
// says where frames were lost ("at its ring").
func (s *Stage) Words(what string, cpu int, lostFrac, senderNs float64, where string) string {
	state := fmt.Sprintf("%.1f ns per packet against the generating CPU's %.1f; %.1f%% of frames lost %s; busy %.0f%%, waiting for its CPU %.0f%%, idle %.0f%% of the time",
		s.NsPerPkt(), senderNs, 100*lostFrac, where, 100*s.BusyFrac(), 100*s.WaitFrac(), 100*s.IdleFrac())
	var msg string
	switch {
	case s.Bound(lostFrac, senderNs):
		msg = fmt.Sprintf("REMOTE-BOUND: %s on CPU %d was the bottleneck (%s): remote-pps %.3g is its rate", what, cpu, state, 1e9/s.NsPerPkt())
	case lostFrac >= rig.MaxLostFrac:
		msg = fmt.Sprintf("NO RATE: %s on CPU %d lost frames although it was the faster side (%s): it slept, or waited for its CPU, while its queue filled; remote-ns/pkt is its CPU time per packet, waking up included", what, cpu, state)
	default:
		msg = fmt.Sprintf("NOT REMOTE-BOUND: %s on CPU %d kept up (%s): no rate for it here; remote-ns/pkt is its CPU time per packet, waking up included", what, cpu, state)
	}
	if s.WaitFrac() > 0.1 {
		msg += "; other tasks held its CPU for part of the run (use a quiet machine)"
	}
	return msg
}

// Figures are the remote-* figures; remote-pps only for a stage that was
// the bottleneck, since otherwise it is not a rate anything sustained.
// remote-cpu-wait shows, run by run, whether other tasks held its CPU.
func (s *Stage) Figures(lostFrac, senderNs float64) []measure.Figure {
	figs := []measure.Figure{
		{Unit: "remote-ns/pkt", Value: s.NsPerPkt()},
		{Unit: "remote-cpu-busy", Value: s.BusyFrac()},
		{Unit: "remote-cpu-wait", Value: s.WaitFrac()},
		{Unit: "remote-bound", Value: measure.OneIf(s.Bound(lostFrac, senderNs))},
	}
	if s.Bound(lostFrac, senderNs) {
		figs = append(figs, measure.Figure{Unit: "remote-pps", Value: 1e9 / s.NsPerPkt()})
	}
	return figs
}

// Schedstat reads a thread's /proc/.../schedstat: the ns it ran and the
// ns it waited, runnable, for a CPU (CONFIG_SCHED_INFO; without it the
// file is missing, and a stage that waited counts as idle).
func Schedstat(path string) (run, wait int64, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(b), &run, &wait); err != nil {
		return 0, 0, fmt.Errorf("%s: %q: %w", path, b, err)
	}
	return run, wait, nil
}
