package rig

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// How the generator batches and how much it sends outside the timed calls.
const (
	// TrafficBatch is the generator's live-frames batch.
	TrafficBatch = bpf.LiveFramesBatch
	// trafficShort is the repeat count of the call that measures a call's
	// fixed cost (page pool setup and teardown).
	trafficShort = 4 * TrafficBatch
	// trafficWarm frames are sent before every measured pair of calls: the
	// first frames after a change of attachments pay for a cold dispatcher
	// and page pool, and RCU callbacks from the change land there.
	trafficWarm = 64 * TrafficBatch
)

// Traffic is the veth rig: namespace, devices, generator and receivers.
type Traffic struct {
	NS *host.Netns
	// Pair.A sends (gen transmits out of it; the sink runs on it) and
	// Pair.B receives (the receiver runs on it), each with Queues queues.
	Pair   host.VethPair
	Queues int

	*Receivers
	frame []byte

	holds      []link.Link // gen and gen_drop, attached to keep them in the dispatcher
	recv, sink link.Link
	cur        *Receiver // what is attached now (nil: unknown)
	fill       *Filler   // created when a Receiver asks for fillers
	// softirqd is the CPU-time clock of each CPU's ksoftirqd, found once
	// (finding them scans /proc).
	softirqd map[int]int32
}

// NewTraffic builds the rig: a namespace with the veth pair A-B (queues RX
// and TX queues each, IPv4 198.18.0.2/24 on B so that passed frames climb
// to UDP and are dropped there for want of a socket, as the UdpNoPorts case
// of docs/claims.md §4), GRO on B, gen's DEVMAP filled from inside the
// namespace, and gen and gen_drop attached natively to a second, idle veth
// pair, so that both stay in the XDP dispatcher: a test_run of an XDP
// program outside it rebuilds the dispatcher twice per call. Close takes it
// down.
func NewTraffic(queues int) (*Traffic, error) {
	if err := probe.HaveLiveFrames(); err != nil {
		return nil, fmt.Errorf("traffic generator: %w", err)
	}
	soft, err := sched.KsoftirqdClocks()
	if err != nil {
		return nil, err
	}
	ns, err := host.CreateNetns()
	if err != nil {
		return nil, fmt.Errorf("create the traffic rig's namespace: %w", err)
	}
	t := &Traffic{NS: ns, Queues: queues, softirqd: soft}
	if err := t.build(); err != nil {
		return nil, errors.Join(err, t.Close())
	}
	return t, nil
}

// build fills in the rig in t.NS.
func (t *Traffic) build() error {
	pairs, err := t.NS.AddVeth(1, t.Queues)
	if err != nil {
		return err
	}
	t.Pair = pairs[0]
	idles, err := t.NS.AddVeth(1, 1)
	if err != nil {
		return err
	}
	idle := idles[0]

	if t.Receivers, err = LoadReceivers(); err != nil {
		return err
	}

	frame, err := bpf.UDPFrame(64)
	if err != nil {
		return err
	}
	copy(frame[0:6], t.Pair.B.MAC)
	copy(frame[6:12], t.Pair.A.MAC)
	t.frame = frame

	h, err := t.NS.Handle()
	if err != nil {
		return err
	}
	b, err := h.LinkByIndex(t.Pair.B.Index)
	if err != nil {
		return fmt.Errorf("find %s: %w", t.Pair.B.Name, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(bpf.DstIP[:]), Mask: net.CIDRMask(24, 32)}}
	if err := h.AddrAdd(b, addr); err != nil {
		return fmt.Errorf("add %v to %s: %w", addr, t.Pair.B.Name, err)
	}

	return t.NS.Do(func() error {
		if err := setGRO(t.Pair.B.Name, true); err != nil {
			return err
		}
		if err := t.objs.GenTx.Put(uint32(0), uint32(t.Pair.A.Index)); err != nil {
			return fmt.Errorf("fill gen_tx with %s: %w", t.Pair.A.Name, err)
		}
		if err := t.objs.RxFwd.Put(uint32(0), uint32(t.Pair.B.Index)); err != nil {
			return fmt.Errorf("fill rx_fwd with %s: %w", t.Pair.B.Name, err)
		}
		for i, p := range []*ebpf.Program{t.objs.Gen, t.objs.GenDrop} {
			dev := []host.Link{idle.A, idle.B}[i]
			l, err := attachXDP(link.XDPOptions{Program: p, Interface: dev.Index, Flags: link.XDPDriverMode})
			if err != nil {
				return fmt.Errorf("attach generator to %s: %w", dev.Name, err)
			}
			t.holds = append(t.holds, l)
		}
		return nil
	})
}

// Close takes the rig down, the reverse of building it: the fillers (made
// last, by Set), the receiver and the sink, the generators' links, the
// programs, and then the namespace, which must outlive the XDP links in
// it: a link outlives its namespace, detached, until its fd is closed.
func (t *Traffic) Close() error {
	var errs []error
	if t.fill != nil {
		errs = append(errs, t.fill.Close())
		t.fill = nil
	}
	errs = append(errs, t.detach())
	for _, l := range t.holds {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("detach generator: %w", err))
		}
	}
	t.holds = nil
	if t.Receivers != nil {
		errs = append(errs, t.Receivers.Close())
		t.Receivers = nil
	}
	if err := t.NS.Close(); err != nil {
		errs = append(errs, fmt.Errorf("delete the traffic rig's namespace %s: %w", t.NS.Name, err))
	}
	return errors.Join(errs...)
}

// FullFill is the number of fillers that fill the dispatcher before the
// receiver attaches: DispatcherMax minus the programs the rig itself keeps
// there (gen, gen_drop and, for receivers that send frames back, the sink).
func (t *Traffic) FullFill(r Receiver) int {
	n := DispatcherMax - len(t.holds)
	if r.echoes() {
		n--
	}
	return n
}

func (t *Traffic) receiver(r Receiver) *ebpf.Program {
	if r.ownProg() {
		return r.Ext.Prog
	}
	return t.Prog(r.Action, r.Prog)
}

// detach removes the receiver and the sink.
func (t *Traffic) detach() error {
	t.cur = nil
	var errs []error
	for _, l := range []*link.Link{&t.recv, &t.sink} {
		if *l != nil {
			if err := (*l).Close(); err != nil {
				errs = append(errs, fmt.Errorf("detach XDP program: %w", err))
			}
			*l = nil
		}
	}
	return errors.Join(errs...)
}

// Set attaches what r describes, in this order: r.Fill fillers, the sink if
// r sends frames back, the receiver last (so that with the dispatcher full
// it is the one left out). It does nothing when r is already in place or is
// the generator-only receiver, which needs no attachments.
func (t *Traffic) Set(r Receiver) error {
	if err := r.check(); err != nil {
		return err
	}
	if r.GeneratorOnly() || (t.cur != nil && *t.cur == r) {
		return nil
	}
	if err := t.detach(); err != nil {
		return err
	}
	if r.Fill > 0 && t.fill == nil {
		f, err := NewFiller(DispatcherMax, link.XDPDriverMode)
		if err != nil {
			return err
		}
		t.fill = f
	}
	if t.fill != nil {
		if err := t.fill.Set(r.Fill); err != nil {
			return err
		}
	}
	mode, _ := r.Mode.Flags() // checked
	err := t.NS.Do(func() error {
		var err error
		if r.echoes() {
			t.sink, err = attachXDP(link.XDPOptions{Program: t.objs.Sink, Interface: t.Pair.A.Index, Flags: link.XDPDriverMode})
			if err != nil {
				return fmt.Errorf("attach sink to %s: %w", t.Pair.A.Name, err)
			}
		}
		t.recv, err = attachXDP(link.XDPOptions{Program: t.receiver(r), Interface: t.Pair.B.Index, Flags: mode})
		if err != nil {
			return fmt.Errorf("attach receiver (%s) to %s: %w", r, t.Pair.B.Name, err)
		}
		return nil
	})
	if err != nil {
		return errors.Join(err, t.detach())
	}
	t.cur = &r
	return nil
}

// Run makes frames frames with the generator of r (gen, or gen_drop for the
// generator-only receiver) in one live-frames test_run call and waits for
// them to settle. It must run on a thread locked to one CPU (see sched.Pinned);
// it enters the namespace for the call.
func (t *Traffic) Run(r Receiver, frames uint32) (Call, error) {
	prog := t.objs.Gen
	if r.GeneratorOnly() {
		prog = t.objs.GenDrop
	}
	var c Call
	cpu, err := sched.CurrentCPU()
	if err != nil {
		return c, err
	}
	soft, ok := t.softirqd[cpu]
	if !ok {
		return c, fmt.Errorf("no ksoftirqd/%d thread in /proc", cpu)
	}
	before, err := t.readFor(r)
	if err != nil {
		return c, err
	}
	var thread int64
	err = t.NS.Do(func() error {
		if r.Ext != nil && r.Ext.Before != nil {
			if err := r.Ext.Before(); err != nil {
				return fmt.Errorf("%s: before the call: %w", r, err)
			}
		}
		opts := ebpf.RunOptions{
			Data:      t.frame,
			Repeat:    frames,
			Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
			BatchSize: TrafficBatch,
			Reset:     func() { c.Restarts++ },
		}
		s0, err := sched.ClockNs(soft)
		if err != nil {
			return err
		}
		w0 := time.Now()
		t0 := sched.ThreadCPU()
		_, err = prog.Run(&opts)
		thread = sched.ThreadCPU() - t0
		if err != nil {
			return fmt.Errorf("live-frames test_run of %d frames: %w", frames, err)
		}
		after, err := t.settle(r, before)
		if err != nil {
			return err
		}
		s1, err := sched.ClockNs(soft)
		if err != nil {
			return err
		}
		if now, _ := sched.CurrentCPU(); now != cpu {
			return fmt.Errorf("the generator thread moved from CPU %d to %d: run it pinned", cpu, now)
		}
		c.Counts = after.Sub(before)
		c.CPU = thread + (s1 - s0)
		c.Wall = time.Since(w0).Nanoseconds()
		if r.Ext != nil && r.Ext.After != nil {
			if err := r.Ext.After(); err != nil {
				return fmt.Errorf("%s: after the call: %w", r, err)
			}
		}
		return nil
	})
	return c, err
}

// Send makes frames frames with gen and returns how many it made, without
// waiting for them or counting what arrived: traffic for a receiver the
// rig does not manage, such as the real-NIC mode's pointed at B.
func (t *Traffic) Send(frames uint32) (uint64, error) {
	before, err := t.Read()
	if err != nil {
		return 0, err
	}
	err = t.NS.Do(func() error {
		opts := ebpf.RunOptions{Data: t.frame, Repeat: frames, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES, BatchSize: TrafficBatch}
		if _, err := t.objs.Gen.Run(&opts); err != nil {
			return fmt.Errorf("live-frames test_run of %d frames: %w", frames, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	after, err := t.Read()
	if err != nil {
		return 0, err
	}
	return after.Gen - before.Gen, nil
}

// Flood sends batches of frames frames with gen, from another goroutine,
// until the returned stop is called; stop returns how many frames were
// made and the first error: traffic for a receiver the rig does not
// manage, as Send.
func (t *Traffic) Flood(frames uint32) (stop func() (uint64, error)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var sent uint64
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			n, e := t.Send(frames)
			if e != nil {
				err = e
				return
			}
			sent += n
		}
	}()
	return func() (uint64, error) {
		close(done)
		wg.Wait()
		return sent, err
	}
}

// settle waits until what the last call sent has arrived or stopped
// arriving: frames still in a veth ring when test_run returns are received
// by ksoftirqd later, or by a stage on another CPU when that CPU lets it.
// It gives up after settleTime once frames arrived, and after
// settleFirstTime while none has: on a busy machine the other CPU's
// thread may not run for many ms, and a count of none would fail the row.
func (t *Traffic) settle(r Receiver, before Counts) (Counts, error) {
	start := time.Now()
	var last uint64
	stable := 0
	for {
		c, err := t.readFor(r)
		if err != nil {
			return c, err
		}
		call := Call{Counts: c.Sub(before)}
		got := call.Delivered(r)
		waited := time.Since(start)
		if got >= call.Gen || (got > 0 && waited > settleTime) || waited > settleFirstTime {
			return c, nil
		}
		if got == last && got > 0 {
			if stable++; stable >= 3 {
				return c, nil
			}
		} else {
			stable = 0
		}
		last = got
		time.Sleep(100 * time.Microsecond)
	}
}

const (
	settleTime      = 20 * time.Millisecond
	settleFirstTime = 500 * time.Millisecond
)

// setGRO turns GRO on or off on a device of the calling thread's network
// namespace, as `ethtool -K <dev> gro on|off` does (the legacy ETHTOOL_SGRO
// ioctl, which every kernel since 2.6.30 answers).
func setGRO(dev string, on bool) error {
	const ethtoolGGRO, ethtoolSGRO = 0x2b, 0x2c
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for ethtool: %w", err)
	}
	defer unix.Close(fd)
	ioctl := func(cmd, data uint32) (uint32, error) {
		v := struct{ cmd, data uint32 }{cmd, data}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		copy(ifr.name[:], dev)
		ifr.data = unsafe.Pointer(&v)
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		runtime.KeepAlive(&v)
		if errno != 0 {
			return 0, errno
		}
		return v.data, nil
	}
	want := uint32(0)
	if on {
		want = 1
	}
	if _, err := ioctl(ethtoolSGRO, want); err != nil {
		return fmt.Errorf("set GRO %v on %s: %w", on, dev, err)
	}
	got, err := ioctl(ethtoolGGRO, 0)
	if err != nil {
		return fmt.Errorf("read GRO of %s: %w", dev, err)
	}
	if got != want {
		return fmt.Errorf("set GRO %v on %s: it reads back %d", on, dev, got)
	}
	return nil
}
