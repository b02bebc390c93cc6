package rig

import (
	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Real frames through XDP on a device.
//
// Traffic is a veth pair in a private namespace with an in-kernel traffic
// generator: BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES (Linux 5.18,
// the method of xdp-trafficgen) runs progs/attach.c's gen on fresh frames
// from a page pool, and gen redirects each one out of the sending end (A),
// so it arrives on the receiving end's (B) RX queue, where the receiver
// program under test runs from the veth driver's NAPI poll (native XDP) or
// from the stack's receive path (generic XDP).
//
// What this machine taught (issue 6):
//   - gen redirects through a DEVMAP filled by a thread inside the
//     namespace. A bare bpf_redirect() resolves the ifindex in the namespace
//     of the thread calling test_run, and a miss vanishes silently.
//   - test_run reports success even when every redirect fails, and
//     cilium/ebpf runs the whole Repeat again after EINTR, so frames are
//     counted in BPF on both sides (per CPU, per RX queue), never derived
//     from Repeat.
//   - veth drops redirected frames unless the receiving end runs NAPI: a
//     native XDP program or GRO turns it on. B has GRO on in every variant,
//     so native and generic differ only in where the program runs. Frames the
//     receiver sends back (XDP_TX, XDP_REDIRECT) need a native program on A
//     too: the sink, which counts and drops them.
//   - veth schedules the receiver's NAPI on the CPU that transmitted, so the
//     generator's CPU does both halves: test_run runs 64 frames with bottom
//     halves off, and the receive softirq runs as they come back on. The CPU
//     time of a call (the generator thread plus that CPU's ksoftirqd) is
//     generating plus receiving; the receiving side's share is the paired
//     difference against a generator-only run (gen_drop) in the same rounds.

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
	// MaxQueues is MAX_QUEUES in progs/attach.c: queue indexes at or above it
	// are counted in slot MaxQueues.
	MaxQueues = 64
)

// An Action is the verdict a rig receiver returns.
type Action string

// The rig's receivers' verdicts.
const (
	Drop     Action = "drop"
	Pass     Action = "pass"
	Tx       Action = "tx"
	Redirect Action = "redirect" // out of B through a DEVMAP, back to A
)

// Actions are the verdicts a rig receiver can return.
var Actions = []Action{Drop, Pass, Tx, Redirect}

// verdict is the action's XDP verdict (bpf.XDPDrop...), the load-time
// constant rx_action of progs/attach.c; 0 (XDP_ABORTED) for none of
// Actions.
func (a Action) verdict() uint32 {
	switch a {
	case Drop:
		return bpf.XDPDrop
	case Pass:
		return bpf.XDPPass
	case Tx:
		return bpf.XDPTx
	case Redirect:
		return bpf.XDPRedirect
	}
	return 0
}

// echoes says frames with this verdict go back out of B, to A's sink.
func (a Action) echoes() bool { return a == Tx || a == Redirect }

// A Mode is where on B a receiver runs.
type Mode string

// The attach modes.
const (
	Native  Mode = "native"  // the veth driver's NAPI poll
	Generic Mode = "generic" // the stack's receive path, on an skb
)

// Modes are both attach modes.
var Modes = []Mode{Native, Generic}

// Flags are the mode's XDP attach flags (false for an unknown mode).
func (m Mode) Flags() (link.XDPAttachFlags, bool) {
	switch m {
	case Native:
		return link.XDPDriverMode, true
	case Generic:
		return link.XDPGenericMode, true
	}
	return 0, false
}

// A Work is what a rig receiver does with a frame before its verdict.
type Work string

// The receivers' work, progs/attach.c's rx_drop, rx_parse and rx_touch.
const (
	WorkDrop  Work = "drop"  // count and return
	WorkParse Work = "parse" // also read the Ethernet, IP and UDP headers
	WorkTouch Work = "touch" // also swap the MAC addresses
)

// Works are the receivers' kinds of work.
var Works = []Work{WorkDrop, WorkParse, WorkTouch}

// prog is the program of p that does w (nil for an unknown Work).
func (w Work) prog(p *bpf.AttachPrograms) *ebpf.Program {
	switch w {
	case WorkDrop:
		return p.RxDrop
	case WorkParse:
		return p.RxParse
	case WorkTouch:
		return p.RxTouch
	}
	return nil
}

// Receiver describes what receives the generator's frames: nothing (the
// zero Receiver: the generator drops its own frames, gen_drop, which
// measures the generator alone), one of the rig's programs (Action, Mode,
// Work, Fill), or another family's program (Mode and an Ext with Prog).
type Receiver struct {
	// Action is the rig program's verdict.
	Action Action
	// Mode is where the receiver runs.
	Mode Mode
	// Work is what the rig program does before its verdict.
	Work Work
	// Fill is how many filler programs (see Filler) are attached to devices
	// of another namespace before the receiver. At Traffic.FullFill the
	// dispatcher is full when the receiver attaches, and the receiver is
	// called through the dispatcher's fallback, an indirect call.
	Fill int
	// Ext, when set, extends the rig for another family: with its own
	// program (Ext.Prog; Action and Work are then unset), or with hooks
	// around one of the rig's.
	Ext *Ext
}

// GeneratorOnly says nothing receives: the generator drops its own frames.
func (r Receiver) GeneratorOnly() bool { return r.Action == "" && !r.ownProg() }

// Ext is what another family adds to a Receiver: its own program on B, the
// count of frames that reached the end of its path, and hooks that meter
// work the rig does not see (a stage on another CPU).
type Ext struct {
	// Name says what the receiver is, in messages.
	Name string
	// Prog, when set, is attached to B in the receiver's Mode instead of
	// one of the rig's programs. It must count every frame in RxCount, as
	// the rig's receivers do (load it with RxCount as a map replacement).
	Prog *ebpf.Program
	// Echoes says Prog sends frames back out of B, to the sink on A.
	Echoes bool
	// Delivered, when set, returns a running count of the frames that
	// reached the end of the path (a socket, another CPU); it replaces the
	// rig's count of delivered frames.
	Delivered func() (uint64, error)
	// Before and After, when set, run around each generator call of the
	// receiver (the test_run and the wait for its frames to settle),
	// outside the CPU time the rig measures.
	Before, After func() error
}

func (r Receiver) String() string {
	switch {
	case r.GeneratorOnly():
		return "generator only"
	case r.Ext != nil:
		return fmt.Sprintf("%s %s", r.Mode, r.Ext.Name)
	}
	return fmt.Sprintf("%s %s %s, %d fillers", r.Mode, r.Work, r.Action, r.Fill)
}

// ownProg says the receiver brings its own program (Ext.Prog).
func (r Receiver) ownProg() bool { return r.Ext != nil && r.Ext.Prog != nil }

func (r Receiver) check() error {
	if r.GeneratorOnly() {
		return nil
	}
	if _, ok := r.Mode.Flags(); !ok {
		return fmt.Errorf("receiver mode %q: want %v", r.Mode, Modes)
	}
	if r.ownProg() {
		if r.Action != "" || r.Work != "" {
			return fmt.Errorf("receiver %s brings its own program: it has no rig action (%q) or work (%q)", r.Ext.Name, r.Action, r.Work)
		}
		return nil
	}
	if r.Action.verdict() == 0 {
		return fmt.Errorf("receiver action %q: want %v", r.Action, Actions)
	}
	if !slices.Contains(Works, r.Work) {
		return fmt.Errorf("receiver work %q: want %v", r.Work, Works)
	}
	if r.Fill < 0 || r.Fill > DispatcherMax {
		return fmt.Errorf("receiver fill %d: want 0 to %d", r.Fill, DispatcherMax)
	}
	return nil
}

// echoes reports whether the receiver sends frames back to A's sink.
func (r Receiver) echoes() bool {
	if r.ownProg() {
		return r.Ext.Echoes
	}
	return r.Action.echoes()
}

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

	tb testing.TB
}

// NewTraffic builds the rig and registers its teardown with tb.Cleanup:
// a namespace with the veth pair A-B (queues RX and TX queues each, IPv4
// 198.18.0.2/24 on B so that passed frames climb to UDP and are dropped
// there for want of a socket, as the UdpNoPorts case of docs/claims.md §4),
// GRO on B, gen's DEVMAP filled from inside the namespace, and gen and
// gen_drop attached natively to a second, idle veth pair, so that both stay
// in the XDP dispatcher: a test_run of an XDP program outside it rebuilds
// the dispatcher twice per call.
func NewTraffic(tb testing.TB, queues int) *Traffic {
	tb.Helper()
	probe.Require(tb, probe.HaveLiveFrames(), "traffic generator")
	t := &Traffic{NS: host.NewNetns(tb), Queues: queues, tb: tb}
	t.Pair = t.NS.AddVeth(tb, 1, queues)[0]
	idle := t.NS.AddVeth(tb, 1, 1)[0]

	t.Receivers = LoadReceivers(tb)

	frame, err := bpf.UDPFrame(64)
	if err != nil {
		tb.Fatal(err)
	}
	copy(frame[0:6], t.Pair.B.MAC)
	copy(frame[6:12], t.Pair.A.MAC)
	t.frame = frame

	h, err := t.NS.Handle()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := h.LinkByIndex(t.Pair.B.Index)
	if err != nil {
		tb.Fatalf("find %s: %v", t.Pair.B.Name, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(bpf.DstIP[:]), Mask: net.CIDRMask(24, 32)}}
	if err := h.AddrAdd(b, addr); err != nil {
		tb.Fatalf("add %v to %s: %v", addr, t.Pair.B.Name, err)
	}

	// Links are registered after NewNetns, so they are closed before the
	// namespace goes: an XDP link outlives its namespace until closed.
	tb.Cleanup(func() {
		if err := t.detach(); err != nil {
			tb.Error(err)
		}
		for _, l := range t.holds {
			if err := l.Close(); err != nil {
				tb.Errorf("detach generator: %v", err)
			}
		}
	})
	err = t.NS.Do(func() error {
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
			l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: dev.Index, Flags: link.XDPDriverMode})
			if err != nil {
				return fmt.Errorf("attach generator to %s: %w", dev.Name, err)
			}
			t.holds = append(t.holds, l)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return t
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

// Receivers are progs/attach.c's programs: the receivers loaded once per
// action, since the action is a load-time constant, all sharing the maps
// of the first load.
type Receivers struct {
	objs bpf.AttachObjects              // every program with rx_action=drop, and every map
	rx   map[Action]*bpf.AttachPrograms // receivers per action; Drop's are objs'
}

// LoadReceivers loads them and registers closing them with tb.Cleanup.
func LoadReceivers(tb testing.TB) *Receivers {
	tb.Helper()
	rs := &Receivers{rx: map[Action]*bpf.AttachPrograms{}}
	spec, err := bpf.LoadAttach()
	if err != nil {
		tb.Fatal(err)
	}
	probe.Require(tb, spec.LoadAndAssign(&rs.objs, nil), "load attach programs")
	tb.Cleanup(func() { rs.objs.Close() })
	rs.rx[Drop] = &bpf.AttachPrograms{RxDrop: rs.objs.RxDrop, RxParse: rs.objs.RxParse, RxTouch: rs.objs.RxTouch}
	replace := map[string]*ebpf.Map{
		bpf.AttachMapGenCount: rs.objs.GenCount, bpf.AttachMapGenTx: rs.objs.GenTx,
		bpf.AttachMapRxCount: rs.objs.RxCount, bpf.AttachMapRxFwd: rs.objs.RxFwd,
		bpf.AttachMapRxProto: rs.objs.RxProto, bpf.AttachMapSinkCount: rs.objs.SinkCount,
	}
	for _, action := range Actions {
		if rs.rx[action] != nil {
			continue
		}
		s := spec.Copy()
		if err := s.Variables[bpf.AttachVarRxAction].Set(action.verdict()); err != nil {
			tb.Fatalf("set rx_action=%s: %v", action, err)
		}
		var p bpf.AttachPrograms
		if err := s.LoadAndAssign(&p, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
			tb.Fatalf("load receivers with rx_action=%s: %v", action, err)
		}
		tb.Cleanup(func() { p.Close() })
		rs.rx[action] = &p
	}
	return rs
}

// Prog is the rig's receiver program that does w and returns action (nil
// for an action or work the rig has no program for).
func (rs *Receivers) Prog(action Action, w Work) *ebpf.Program {
	p := rs.rx[action]
	if p == nil {
		return nil
	}
	return w.prog(p)
}

// RxCount is the receivers' per-CPU, per-queue frame counter.
func (rs *Receivers) RxCount() *ebpf.Map { return rs.objs.RxCount }

func (t *Traffic) receiver(r Receiver) *ebpf.Program {
	if r.ownProg() {
		return r.Ext.Prog
	}
	return t.Prog(r.Action, r.Work)
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
		t.fill = NewFiller(t.tb, DispatcherMax, link.XDPDriverMode)
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
			t.sink, err = link.AttachXDP(link.XDPOptions{Program: t.objs.Sink, Interface: t.Pair.A.Index, Flags: link.XDPDriverMode})
			if err != nil {
				return fmt.Errorf("attach sink to %s: %w", t.Pair.A.Name, err)
			}
		}
		t.recv, err = link.AttachXDP(link.XDPOptions{Program: t.receiver(r), Interface: t.Pair.B.Index, Flags: mode})
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

// Run makes frames frames with the generator of r (gen, or gen_drop for the
// generator-only receiver) in one live-frames test_run call and waits for
// them to settle. It must run on a thread locked to one CPU (see Pinned);
// it enters the namespace for the call.
func (t *Traffic) Run(r Receiver, frames uint32) (Call, error) {
	prog := t.objs.Gen
	if r.GeneratorOnly() {
		prog = t.objs.GenDrop
	}
	var c Call
	cpu, err := measure.CurrentCPU()
	if err != nil {
		return c, err
	}
	soft, err := measure.KsoftirqdClock(cpu)
	if err != nil {
		return c, err
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
		s0, err := measure.ClockNs(soft)
		if err != nil {
			return err
		}
		w0 := time.Now()
		t0 := measure.ThreadCPU()
		_, err = prog.Run(&opts)
		thread = measure.ThreadCPU() - t0
		if err != nil {
			return fmt.Errorf("live-frames test_run of %d frames: %w", frames, err)
		}
		after, err := t.settle(r, before)
		if err != nil {
			return err
		}
		s1, err := measure.ClockNs(soft)
		if err != nil {
			return err
		}
		if now, _ := measure.CurrentCPU(); now != cpu {
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
// by ksoftirqd later. It gives up after 20 ms.
func (t *Traffic) settle(r Receiver, before Counts) (Counts, error) {
	deadline := time.Now().Add(20 * time.Millisecond)
	var last uint64
	stable := 0
	for {
		c, err := t.readFor(r)
		if err != nil {
			return c, err
		}
		call := Call{Counts: c.Sub(before)}
		got := call.Delivered(r)
		if got >= call.Gen || time.Now().After(deadline) {
			return c, nil
		}
		if got == last {
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

// TrafficSample is one measurement of a receiver: a short call and a long call,
// the difference of which cancels a call's fixed cost.
type TrafficSample struct {
	Long Call
	// Ns is CPU ns per packet the measured side handled: (long CPU - short
	// CPU) / (long packets - short packets).
	Ns float64
}

// Measure sets r up, warms it, and measures frames frames against a short
// call. The thread must be pinned.
func (t *Traffic) Measure(r Receiver, frames uint32) (TrafficSample, error) {
	var s TrafficSample
	if frames <= trafficShort {
		return s, fmt.Errorf("measure %d frames: want more than %d", frames, trafficShort)
	}
	if err := t.Set(r); err != nil {
		return s, err
	}
	if _, err := t.Run(r, trafficWarm); err != nil {
		return s, err
	}
	short, err := t.Run(r, trafficShort)
	if err != nil {
		return s, err
	}
	long, err := t.Run(r, frames)
	if err != nil {
		return s, err
	}
	dp := float64(long.Packets(r)) - float64(short.Packets(r))
	if long.Packets(r) == 0 || dp <= 0 {
		return s, fmt.Errorf("%s: %w", r, &NoTrafficError{Gen: long.Gen, Received: long.Received(), Returned: long.Returned()})
	}
	s.Long = long
	s.Ns = float64(long.CPU-short.CPU) / dp
	return s, nil
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
	RxBound  bool
	Rounds   int
	Restarts int
}

// Bench measures r on a thread pinned to o.CPU, once (measure.Once) for
// o.Budget(). With o.Interleave it measures in rounds r, the generator
// alone and, if ref is not nil, ref, in an order balanced over blocks of
// rounds, so all of them see the machine at the same speed, and reports
// the paired differences; otherwise r alone. o.CallTime sets the length of
// one long call; reset, when set, runs once the warm-up is done, after the
// benchmark's timer is reset. A failure fails b.
func (t *Traffic) Bench(b *testing.B, r Receiver, ref *Receiver, o measure.BenchOptions, reset func()) TrafficResult {
	b.Helper()
	var res TrafficResult
	err := measure.OncePinned(b, o.CPU, func() error {
		var err error
		res, err = t.bench(o.Budget(), r, ref, o, func() {
			b.ResetTimer()
			if reset != nil {
				reset()
			}
		})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

func (t *Traffic) bench(budget measure.Budget, r Receiver, ref *Receiver, o measure.BenchOptions, reset func()) (TrafficResult, error) {
	var res TrafficResult
	stream := func(s Receiver, own bool) measure.Stream {
		return func(frames uint32) (float64, error) {
			sample, err := t.Measure(s, frames)
			if err != nil {
				return 0, err
			}
			res.Restarts += sample.Long.Restarts
			if own {
				res.Total.Counts = res.Total.Counts.Add(sample.Long.Counts)
				res.Total.CPU += sample.Long.CPU
				res.Total.Wall += sample.Long.Wall
			}
			return sample.Ns, nil
		}
	}
	// Streams: the receiver, then the generator alone, then the reference.
	streams := []measure.Stream{stream(r, true)}
	if o.Interleave {
		streams = append(streams, stream(Receiver{}, false))
		if ref != nil {
			streams = append(streams, stream(*ref, false))
		}
	}
	sz := measure.Sizing{Warm: 16 * trafficWarm, Min: trafficShort + 256*TrafficBatch, Max: 1 << 26, CallTime: o.CallTime}
	rounds, err := measure.Run(budget, sz, func() {
		// The warm-up's frames are not the benchmark's.
		res = TrafficResult{}
		if reset != nil {
			reset()
		}
	}, streams...)
	if err != nil {
		return res, err
	}
	res.Rounds = rounds.Count()
	res.Ns = rounds.Location(0).Value
	res.PPS = 1e9 / res.Ns
	if len(streams) > 1 {
		res.HaveGen = true
		res.GenNs = rounds.Location(1).Value
		rx := rounds.Paired(0, 1)
		res.RxNs, res.RxCI95 = rx.Value, rx.Half()
	}
	if len(streams) > 2 {
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
	return res, nil
}

// MaxLostFrac is the share of lost frames above which a result does not
// measure the receiver: frames that never arrived cost the receiver nothing.
const MaxLostFrac = 0.01

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
