package bpf

import (
	"fmt"
	"math"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// XDPMode is where on a device an XDP program runs.
type XDPMode string

// The attach modes.
const (
	XDPNative  XDPMode = "native"  // the driver's NAPI poll
	XDPGeneric XDPMode = "generic" // the stack's receive path, on an skb
)

// XDPModes are both attach modes, native first.
var XDPModes = []XDPMode{XDPNative, XDPGeneric}

// Flags are the mode's XDP attach flags (false for an unknown mode).
func (m XDPMode) Flags() (link.XDPAttachFlags, bool) {
	switch m {
	case XDPNative:
		return link.XDPDriverMode, true
	case XDPGeneric:
		return link.XDPGenericMode, true
	}
	return 0, false
}

// MaxQueues is MAX_QUEUES in progs/include/queues.h: queue indexes at or
// above it are counted in slot MaxQueues.
const MaxQueues = 64

// QueueCounts is a reading of a per-CPU, per-RX-queue counter
// (progs/include/queues.h's count), indexed [queue][cpu]; the last queue
// slot holds the queues at or above MaxQueues.
type QueueCounts [][]uint64

// ReadQueues reads counter map m for queues 0..n-1 and the overflow slot.
func ReadQueues(m *ebpf.Map, n int) (QueueCounts, error) {
	keys := make([]uint32, 0, n+1)
	for q := 0; q < min(n, MaxQueues); q++ {
		keys = append(keys, uint32(q))
	}
	keys = append(keys, MaxQueues)
	out := make(QueueCounts, len(keys))
	for i, k := range keys {
		if err := m.Lookup(k, &out[i]); err != nil {
			return nil, fmt.Errorf("read %s queue %d: %w", m, k, err)
		}
	}
	return out, nil
}

// Sum is the count over every queue and CPU.
func (c QueueCounts) Sum() uint64 {
	var n uint64
	for _, q := range c {
		for _, v := range q {
			n += v
		}
	}
	return n
}

// Sub is c - o, element by element.
func (c QueueCounts) Sub(o QueueCounts) QueueCounts {
	return c.each(o, func(a, b uint64) uint64 { return a - b })
}

// Add is c + o, element by element.
func (c QueueCounts) Add(o QueueCounts) QueueCounts {
	return c.each(o, func(a, b uint64) uint64 { return a + b })
}

func (c QueueCounts) each(o QueueCounts, f func(a, b uint64) uint64) QueueCounts {
	r := make(QueueCounts, len(c))
	for q := range c {
		r[q] = make([]uint64, len(c[q]))
		for cpu := range c[q] {
			r[q][cpu] = f(c[q][cpu], o[q][cpu])
		}
	}
	return r
}

// Table formats c as a table, one line per queue and CPU with traffic,
// with its share: how a run spread over RX queues and CPUs.
func (c QueueCounts) Table() string {
	var b strings.Builder
	total := c.Sum()
	fmt.Fprintf(&b, "%-6s %-6s %14s %7s\n", "rxq", "cpu", "frames", "share")
	for q, row := range c {
		name := fmt.Sprint(q)
		if q == len(c)-1 {
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
