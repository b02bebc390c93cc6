package iface

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/sched"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
)

// A Window is what a device saw over a stretch of time (Meter.Next), or
// over several such stretches added together.
type Window struct {
	RX       bpf.QueueCounts // frames per queue and CPU
	Duration time.Duration
	// Softirq and Elapsed are per-CPU time in softirq (where XDP runs, in
	// NAPI) and wall time, from /proc/stat ticks (USER_HZ, 10 ms).
	Softirq, Elapsed []time.Duration
	// Missed is what the NIC dropped before XDP saw it (rx_missed, rx_fifo
	// and rx_over errors): receive rings overflowing because the CPUs did not
	// keep up.
	Missed uint64
}

// Packets sums RX.
func (s Window) Packets() uint64 { return s.RX.Sum() }

// PerCPU sums RX per CPU.
func (s Window) PerCPU() []uint64 {
	var n []uint64
	for _, row := range s.RX {
		for cpu, v := range row {
			for len(n) <= cpu {
				n = append(n, 0)
			}
			n[cpu] += v
		}
	}
	return n
}

// NsPerPkt is softirq CPU time per packet, summed over the CPUs that
// received: the receiver's cost, plus the driver's and anything else that
// ran in softirq on those CPUs (tick-sampled, so runs of a few seconds).
func (s Window) NsPerPkt() float64 {
	var soft time.Duration
	for cpu, n := range s.PerCPU() {
		if n > 0 && cpu < len(s.Softirq) {
			soft += s.Softirq[cpu]
		}
	}
	p := s.Packets()
	if p == 0 {
		return math.NaN()
	}
	return float64(soft.Nanoseconds()) / float64(p)
}

// Busy is the largest softirq share of a CPU that received: near 1 the
// receiving CPU was saturated and pps measures the receiver; well below,
// the generator or the link set the rate.
func (s Window) Busy() float64 {
	busy := 0.0
	for cpu, n := range s.PerCPU() {
		if n > 0 && cpu < len(s.Softirq) && s.Elapsed[cpu] > 0 {
			busy = math.Max(busy, float64(s.Softirq[cpu])/float64(s.Elapsed[cpu]))
		}
	}
	return busy
}

// Add is s and o together: o's frames, time and drops added to s's.
func (s Window) Add(o Window) Window {
	if s.RX == nil {
		return o
	}
	r := Window{RX: s.RX.Add(o.RX), Duration: s.Duration + o.Duration, Missed: s.Missed + o.Missed}
	for cpu := range min(len(s.Softirq), len(o.Softirq)) {
		r.Softirq = append(r.Softirq, s.Softirq[cpu]+o.Softirq[cpu])
		r.Elapsed = append(r.Elapsed, s.Elapsed[cpu]+o.Elapsed[cpu])
	}
	return r
}

// A Meter samples a receiver's counters on a device window after window:
// the real-NIC mode's calls, which the rounds engine makes as it makes
// any other stream's. Each window starts where the last one ended.
type Meter struct {
	ifc   Device
	rx    *ebpf.Map
	w     io.Writer
	start time.Time
	last  reading
}

// reading is the counters at one moment.
type reading struct {
	rx     bpf.QueueCounts
	ticks  []sched.CPUTicks
	missed uint64
	at     time.Time
}

// NewMeter starts sampling rxCount, the receiver's per-queue, per-CPU
// counter, and the NIC's drops on ifc; every window writes its table (pps
// per queue and CPU, each receiving CPU's softirq share) to w.
func NewMeter(ifc Device, rxCount *ebpf.Map, w io.Writer) (*Meter, error) {
	m := &Meter{ifc: ifc, rx: rxCount, w: w}
	r, err := m.read()
	if err != nil {
		return nil, err
	}
	m.start, m.last = r.at, r
	return m, nil
}

// read takes a reading. Its time is the frame counts' (the window's rate
// is theirs), taken before the device's drop counter, whose netlink query
// enters the device's namespace.
func (m *Meter) read() (reading, error) {
	rx, err := bpf.ReadQueues(m.rx, m.ifc.Queues)
	if err != nil {
		return reading{}, err
	}
	at := time.Now()
	ticks, err := sched.ReadCPUTicks()
	if err != nil {
		return reading{}, err
	}
	missed, err := m.ifc.missed()
	return reading{rx: rx, ticks: ticks, missed: missed, at: at}, err
}

// Next waits d and returns what the device saw since the last window
// ended (or the Meter started).
func (m *Meter) Next(d time.Duration) (Window, error) {
	time.Sleep(d)
	now, err := m.read()
	if err != nil {
		return Window{}, err
	}
	was := m.last
	m.last = now
	s := Window{RX: now.rx.Sub(was.rx), Duration: now.at.Sub(was.at), Missed: now.missed - was.missed}
	for cpu := range min(len(was.ticks), len(now.ticks)) {
		s.Softirq = append(s.Softirq, sched.TicksDur(now.ticks[cpu].Softirq-was.ticks[cpu].Softirq))
		s.Elapsed = append(s.Elapsed, sched.TicksDur(now.ticks[cpu].Total-was.ticks[cpu].Total))
	}
	fmt.Fprint(m.w, rateTable(m.ifc, s.RX, was.ticks, now.ticks, s.Duration, now.at.Sub(m.start)))
	return s, nil
}

func rateTable(ifc Device, delta bpf.QueueCounts, t0, t1 []sched.CPUTicks, dt, elapsed time.Duration) string {
	var b strings.Builder
	sec := dt.Seconds()
	// Not "word: ...": benchfmt would read a configuration line.
	fmt.Fprintf(&b, "XDP on %s at %.0fs\n", ifc, elapsed.Seconds())
	fmt.Fprintf(&b, "  %-6s %-5s %14s %9s\n", "rxq", "cpu", "pps", "softirq")
	var total uint64
	for q, row := range delta {
		name := strconv.Itoa(q)
		if q == len(delta)-1 {
			name = fmt.Sprintf(">=%d", bpf.MaxQueues)
		}
		for cpu, v := range row {
			if v == 0 {
				continue
			}
			total += v
			soft := "-"
			if cpu < len(t0) && cpu < len(t1) && t1[cpu].Total > t0[cpu].Total {
				soft = fmt.Sprintf("%.0f%%", 100*float64(t1[cpu].Softirq-t0[cpu].Softirq)/float64(t1[cpu].Total-t0[cpu].Total))
			}
			fmt.Fprintf(&b, "  %-6s %-5d %14.0f %9s\n", name, cpu, float64(v)/sec, soft)
		}
	}
	fmt.Fprintf(&b, "  %-6s %-5s %14.0f\n", "all", "", float64(total)/sec)
	return b.String()
}

// missed reads the NIC's receive drops that happen before XDP.
func (ifc Device) missed() (uint64, error) {
	var n uint64
	err := ifc.link(func(l netlink.Link) error {
		if st := l.Attrs().Statistics; st != nil {
			n = st.RxMissedErrors + st.RxFifoErrors + st.RxOverErrors
		}
		return nil
	})
	return n, err
}

// SanitizeName makes a device name usable as a benchmark name value:
// lowercase, and no trailing -<digits>, which benchfmt reads as GOMAXPROCS.
func SanitizeName(s string) string {
	s = strings.ToLower(strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == '=' {
			return '_'
		}
		return r
	}, s))
	if i := strings.LastIndexByte(s, '-'); i >= 0 && i < len(s)-1 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil {
			s = s[:i] + "_" + s[i+1:]
		}
	}
	return s
}
