package rig

import (
	"fmt"

	"bpfbench/bpf"
)

// Counts is a reading of the rig's counters.
type Counts struct {
	// Gen is the frames gen or gen_drop made, summed over CPUs.
	Gen uint64
	// RX and Sink are the frames the receiver and the sink saw, per
	// queue and CPU.
	RX, Sink bpf.QueueCounts
	// Ext is what Receiver.Ext.Delivered counted.
	Ext uint64
}

// Received sums c.RX; Returned sums c.Sink.
func (c Counts) Received() uint64 { return c.RX.Sum() }
func (c Counts) Returned() uint64 { return c.Sink.Sum() }

// Sub returns c - o, element by element.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Gen: c.Gen - o.Gen, RX: c.RX.Sub(o.RX), Sink: c.Sink.Sub(o.Sink), Ext: c.Ext - o.Ext}
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	if c.RX == nil {
		return o
	}
	return Counts{Gen: c.Gen + o.Gen, RX: c.RX.Add(o.RX), Sink: c.Sink.Add(o.Sink), Ext: c.Ext + o.Ext}
}

// Read returns the counters now.
func (t *Traffic) Read() (Counts, error) {
	var c Counts
	var gen []uint64
	if err := t.objs.GenCount.Lookup(uint32(0), &gen); err != nil {
		return c, fmt.Errorf("read gen_count: %w", err)
	}
	for _, v := range gen {
		c.Gen += v
	}
	var err error
	if c.RX, err = bpf.ReadQueues(t.objs.RxCount, t.Queues); err != nil {
		return c, err
	}
	if c.Sink, err = bpf.ReadQueues(t.objs.SinkCount, t.Queues); err != nil {
		return c, err
	}
	return c, nil
}

// readFor is Read plus r's own count of delivered frames.
func (t *Traffic) readFor(r Receiver) (Counts, error) {
	c, err := t.Read()
	if err == nil && r.Ext != nil && r.Ext.Delivered != nil {
		if c.Ext, err = r.Ext.Delivered(); err != nil {
			err = fmt.Errorf("%s: count delivered frames: %w", r, err)
		}
	}
	return c, err
}

// Call is one generator call: what it made and where it arrived, and the
// CPU time of the generating CPU.
type Call struct {
	Counts
	// CPU is the thread CPU time of the test_run call plus the CPU time
	// that CPU's ksoftirqd used meanwhile (receive work the kernel deferred
	// to it), in ns. It leaves out time other tasks had the CPU.
	CPU int64
	// Wall is the wall-clock duration of the call and its settling, in ns.
	Wall int64
	// Restarts counts test_run loops abandoned on EINTR and run again.
	Restarts int
}

// Delivered is what arrived at the end of the path: the receiver, or for
// a receiver that sends frames back, the sink.
func (c Call) Delivered(r Receiver) uint64 {
	switch {
	case r.GeneratorOnly():
		return c.Gen
	case r.Ext != nil && r.Ext.Delivered != nil:
		return c.Ext
	case r.echoes():
		return c.Returned()
	}
	return c.Received()
}

// Packets is what the measured side handled: the receiver's frames, or
// for the generator-only receiver the frames made.
func (c Call) Packets(r Receiver) uint64 {
	if r.GeneratorOnly() {
		return c.Gen
	}
	return c.Received()
}
