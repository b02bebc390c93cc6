package rig

import (
	"fmt"

	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/robust"
)

// ShortCalls are the recent short calls of one stream: the median of
// their CPU time and of their packets is the fixed cost Measure
// subtracts from a long call, as a test_run loop subtracts its own
// (robust.Recent). retaken counts the pairs of calls Measure took again.
type ShortCalls struct {
	cpu, pkts robust.Recent
	retaken   int
}

// maxRetaken bounds how often Measure takes a pair of calls again because
// the long one cost no more CPU than the short calls.
const maxRetaken = 10

// Measure sets r up, warms it, and measures a long call of frames frames:
// it returns the call, and the CPU ns per packet the measured side
// handled, less the fixed cost of a call: (long CPU - short CPU) / (long
// packets - short packets), the short call's the median of short's
// (this call's short call added). The thread must be pinned.
//
// A long call that cost no more than the short calls' median measured
// nothing: the thread's CPU clock charged a short call for time not spent
// on its frames, as a vCPU that shares a host thread with another is
// charged (docs/method.md#a-sample-at-or-below-zero). Measure then takes
// the pair again, up to maxRetaken times, and the short call's median
// moves past the outlier.
func (t *Traffic) Measure(r Receiver, frames uint32, short *ShortCalls) (long Call, ns float64, err error) {
	if frames <= trafficShort {
		return long, 0, fmt.Errorf("measure %d frames: want more than %d", frames, trafficShort)
	}
	if err := t.Set(r); err != nil {
		return long, 0, err
	}
	for tries := 0; ; tries++ {
		if _, err := t.Run(r, trafficWarm); err != nil {
			return long, 0, err
		}
		sc, err := t.Run(r, trafficShort)
		if err != nil {
			return long, 0, err
		}
		if long, err = t.Run(r, frames); err != nil {
			return long, 0, err
		}
		cpu, dp := short.add(sc, long, r)
		if long.Packets(r) == 0 || dp <= 0 {
			return long, 0, fmt.Errorf("%s: %w", r, &NoTrafficError{Gen: long.Gen, Received: long.Received(), Returned: long.Returned()})
		}
		if cpu > 0 {
			return long, cpu / dp, nil
		}
		if tries == maxRetaken {
			return long, 0, fmt.Errorf("%s: %d long calls in a row cost no more CPU than the short calls: the thread's CPU clock counts time not spent on the frames", r, tries+1)
		}
		short.retaken++
	}
}

// add adds the short call sc and returns, for long, the CPU time and the
// packets beyond the short calls' medians.
func (s *ShortCalls) add(sc, long Call, r Receiver) (cpu, pkts float64) {
	cpu = float64(long.CPU) - s.cpu.Add(float64(sc.CPU))
	pkts = float64(long.Packets(r)) - s.pkts.Add(float64(sc.Packets(r)))
	return cpu, pkts
}

// NoTrafficError says the measured side saw no frames: the redirect
// failed, the receiving veth had no NAPI, or the receiver is not attached.
type NoTrafficError struct{ Gen, Received, Returned uint64 }

func (e *NoTrafficError) Error() string {
	return fmt.Sprintf("no frames reached the measured side (generated %d, received %d, returned %d): test_run succeeds even when every redirect fails",
		e.Gen, e.Received, e.Returned)
}

// TrafficResult summarises the rounds of one receiver.
type TrafficResult struct {
	// Ns is CPU ns per packet the receiver handled, generating included
	// (one CPU does both); PPS is 1e9/Ns, the rate that CPU sustains.
	Ns, PPS float64
	// GenNs is the generator-only run's ns per frame in the same rounds;
	// HaveGen says whether it was measured (interleaved mode).
	GenNs   float64
	HaveGen bool
	// RxNs is the median per-round paired difference Ns - GenNs: the
	// receiving side's cost per packet, with RxCI95 its 95% half-width.
	RxNs, RxCI95 float64
	// Delta is the median paired difference against a reference
	// receiver, with DeltaCI95 its 95% half-width and DeltaRel the
	// difference as a fraction of the reference; HaveDelta says whether
	// there was one.
	Delta, DeltaCI95, DeltaRel float64
	HaveDelta                  bool
	// Totals over the long calls of the measured receiver.
	Total Call
	// Lost is generated minus delivered, LostFrac that over generated.
	Lost     uint64
	LostFrac float64
	// RxBound says the number measures the receiver: the receiving side
	// costs more than generating, and under MaxLostFrac of frames were lost.
	RxBound bool
	// Calls is the calls measured, Contended how many of them ran
	// slower with a reference that moved and were left out.
	Calls     int
	Contended measure.Contended
	// Remeasured counts calls taken again: test_run loops abandoned on
	// EINTR, and pairs Measure took again.
	Remeasured int
}

// Job is what the engine measures for a row of r (a measure.Row's
// Start): r's frames and, with interleave, the generator alone and, if
// ref is not nil, ref, in the same rounds, in an order balanced over
// blocks of rounds, so that all of them see the machine at the same
// speed. reset, when set, runs once the warm-up is done. summary turns the
// engine's Result into r's figures: the paired differences, and the
// totals of r's own calls.
func (t *Traffic) Job(r Receiver, ref *Receiver, interleave bool, reset func()) (w measure.Job, summary func(measure.Result) TrafficResult) {
	var res TrafficResult
	stream := func(s Receiver, own bool) measure.Stream {
		var short ShortCalls
		return func(frames uint32) (float64, error) {
			before := short.retaken
			long, ns, err := t.Measure(s, frames, &short)
			if err != nil {
				return 0, err
			}
			res.Remeasured += long.Restarts + short.retaken - before
			if own {
				res.Total.Counts = res.Total.Counts.Add(long.Counts)
				res.Total.CPU += long.CPU
				res.Total.Wall += long.Wall
			}
			return ns, nil
		}
	}
	// Streams: the receiver, then the generator alone, then the reference.
	w.Streams = []measure.Stream{stream(r, true)}
	if interleave {
		w.Streams = append(w.Streams, stream(Receiver{}, false))
		if ref != nil {
			w.Streams = append(w.Streams, stream(*ref, false))
		}
	}
	w.Sizes = trafficSizes
	w.Reset = func() {
		// The warm-up's frames are not the benchmark's.
		res = TrafficResult{}
		if reset != nil {
			reset()
		}
	}
	return w, func(m measure.Result) TrafficResult {
		res.Contended = m.Contended
		res.summarise(m.Samples, r)
		return res
	}
}

// trafficSizes are frames: a call long enough that its short call's
// frames (Traffic.Measure subtracts them) stay small beside it.
var trafficSizes = measure.CallSizes{Warm: 16 * trafficWarm, Min: trafficShort + 256*TrafficBatch, Max: 1 << 26}

// summarise fills in res's figures from the rounds of r's streams.
func (res *TrafficResult) summarise(rounds *measure.Rounds, r Receiver) {
	res.Calls = rounds.Count()
	res.Ns = rounds.Location(0).Value
	res.PPS = 1e9 / res.Ns
	if len(rounds.Ns) > 1 {
		res.HaveGen = true
		res.GenNs = rounds.Location(1).Value
		rx := rounds.Paired(0, 1)
		res.RxNs, res.RxCI95 = rx.Value, rx.Half()
	}
	if len(rounds.Ns) > 2 {
		res.HaveDelta = true
		d := rounds.Paired(0, 2)
		res.Delta, res.DeltaCI95 = d.Value, d.Half()
		res.DeltaRel = rounds.Relative(0, 2).Value
	}
	delivered := res.Total.Delivered(r)
	if delivered < res.Total.Gen {
		res.Lost = res.Total.Gen - delivered
	}
	if res.Total.Gen > 0 {
		res.LostFrac = float64(res.Lost) / float64(res.Total.Gen)
	}
	res.RxBound = !r.GeneratorOnly() && res.HaveGen && res.RxNs > res.GenNs && res.LostFrac < MaxLostFrac
}

// Figures are a traffic row's own figures (measure.Row.Report):
// capacity-pps and ns/pkt (generating and receiving, on one CPU);
// gen-ns/pkt, the generator alone; for a receiver, rx-ns/pkt (the paired
// difference, its half-width rx-ci95-ns) and rx-bound; with a reference,
// delta-ns/pkt and delta-ci95-ns; the frames lost; and the calls taken
// again (remeasured).
func (res TrafficResult) Figures(r Receiver) []measure.Figure {
	figs := []measure.Figure{{Unit: "capacity-pps", Value: res.PPS}, {Unit: "ns/pkt", Value: res.Ns}}
	if res.HaveGen {
		figs = append(figs, measure.Figure{Unit: "gen-ns/pkt", Value: res.GenNs})
	}
	if !r.GeneratorOnly() && res.HaveGen {
		figs = append(figs, measure.Figure{Unit: "rx-ns/pkt", Value: res.RxNs})
		if res.Calls > 1 {
			figs = append(figs, measure.Figure{Unit: "rx-ci95-ns", Value: res.RxCI95})
		}
		figs = append(figs, measure.Figure{Unit: "rx-bound", Value: measure.OneIf(res.RxBound)})
	}
	if res.HaveDelta {
		figs = append(figs, measure.Figure{Unit: "delta-ns/pkt", Value: res.Delta})
		if res.Calls > 1 {
			figs = append(figs, measure.Figure{Unit: "delta-ci95-ns", Value: res.DeltaCI95})
		}
	}
	return append(figs, measure.Figure{Unit: "lost-pkts", Value: float64(res.Lost)},
		measure.Figure{Unit: "lost-frac", Value: res.LostFrac},
		measure.Figure{Unit: "remeasured", Value: float64(res.Remeasured)})
}

// MaxLostFrac is the share of lost frames above which a result does not
// measure the receiver: frames that never arrived cost the receiver nothing.
const MaxLostFrac = 0.01
