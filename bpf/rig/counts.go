package rig

import (
	"fmt"
	"math"
	"strings"

	"github.com/cilium/ebpf"
)

// Counts is a reading of the rig's counters.
type Counts struct {
	// Gen is the frames gen or gen_drop made, summed over CPUs.
	Gen uint64
	// RX and Sink are the frames the receiver and the sink saw, indexed
	// [queue][cpu]; the last queue slot holds queues at or above 64.
	RX, Sink [][]uint64
	// Ext is what Receiver.Ext.Delivered counted.
	Ext uint64
}

// Received sums c.RX; Returned sums c.Sink.
func (c Counts) Received() uint64 { return sum2(c.RX) }
func (c Counts) Returned() uint64 { return sum2(c.Sink) }

func sum2(m [][]uint64) uint64 {
	var n uint64
	for _, q := range m {
		for _, v := range q {
			n += v
		}
	}
	return n
}

// Sub returns c - o, element by element.
func (c Counts) Sub(o Counts) Counts {
	sub := func(a, b [][]uint64) [][]uint64 {
		r := make([][]uint64, len(a))
		for q := range a {
			r[q] = make([]uint64, len(a[q]))
			for cpu := range a[q] {
				r[q][cpu] = a[q][cpu] - b[q][cpu]
			}
		}
		return r
	}
	return Counts{Gen: c.Gen - o.Gen, RX: sub(c.RX, o.RX), Sink: sub(c.Sink, o.Sink), Ext: c.Ext - o.Ext}
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	if c.RX == nil {
		return o
	}
	add := func(a, b [][]uint64) [][]uint64 {
		r := make([][]uint64, len(a))
		for q := range a {
			r[q] = make([]uint64, len(a[q]))
			for cpu := range a[q] {
				r[q][cpu] = a[q][cpu] + b[q][cpu]
			}
		}
		return r
	}
	return Counts{Gen: c.Gen + o.Gen, RX: add(c.RX, o.RX), Sink: add(c.Sink, o.Sink), Ext: c.Ext + o.Ext}
}

// ReadQueues reads a per-CPU, per-queue counter map for queues 0..n-1
// and the overflow slot.
func ReadQueues(m *ebpf.Map, n int) ([][]uint64, error) {
	keys := make([]uint32, 0, n+1)
	for q := 0; q < min(n, MaxQueues); q++ {
		keys = append(keys, uint32(q))
	}
	keys = append(keys, MaxQueues)
	out := make([][]uint64, len(keys))
	for i, k := range keys {
		if err := m.Lookup(k, &out[i]); err != nil {
			return nil, fmt.Errorf("read %s queue %d: %w", m, k, err)
		}
	}
	return out, nil
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
	if c.RX, err = ReadQueues(t.objs.RxCount, t.Queues); err != nil {
		return c, err
	}
	if c.Sink, err = ReadQueues(t.objs.SinkCount, t.Queues); err != nil {
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

// QueueTable formats per-queue, per-CPU counts (as Counts.RX: the last
// row holds queues 64 and up) as a table, one line per queue and CPU with
// traffic, with its share: how a run spread over RX queues and CPUs.
func QueueTable(m [][]uint64) string {
	var b strings.Builder
	total := sum2(m)
	fmt.Fprintf(&b, "%-6s %-6s %14s %7s\n", "rxq", "cpu", "frames", "share")
	for q, row := range m {
		name := fmt.Sprint(q)
		if q == len(m)-1 {
			name = fmt.Sprintf(">=%d", MaxQueues)
		}
		for cpu, v := range row {
			if v == 0 {
				continue
			}
			fmt.Fprintf(&b, "%-6s %-6d %14d %6.1f%%\n", name, cpu, v, 100*float64(v)/math.Max(1, float64(total)))
		}
	}
	return b.String()
}
