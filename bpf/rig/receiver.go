package rig

import (
	"errors"
	"fmt"
	"slices"

	"bpfbench/bpf"

	"github.com/cilium/ebpf"
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

// An RxProg is a rig receiver's program: what it does with a frame
// before its verdict (the rows' prog=).
type RxProg string

// The receivers' programs, progs/attach.c's rx_drop, rx_parse and rx_touch.
const (
	RxDrop  RxProg = "drop"  // count and return
	RxParse RxProg = "parse" // also read the Ethernet, IP and UDP headers
	RxTouch RxProg = "touch" // also swap the MAC addresses
)

// RxProgs are the receivers' programs.
var RxProgs = []RxProg{RxDrop, RxParse, RxTouch}

// prog is the program of p that does w (nil for an unknown RxProg).
func (w RxProg) prog(p *bpf.AttachPrograms) *ebpf.Program {
	switch w {
	case RxDrop:
		return p.RxDrop
	case RxParse:
		return p.RxParse
	case RxTouch:
		return p.RxTouch
	}
	return nil
}

// Receiver describes what receives the generator's frames: nothing (the
// zero Receiver: the generator drops its own frames, gen_drop, which
// measures the generator alone), one of the rig's programs (Action, Mode,
// Prog, Fill), or another family's program (Mode and an Ext with Prog).
type Receiver struct {
	// Action is the rig program's verdict.
	Action Action
	// Mode is where the receiver runs.
	Mode bpf.XDPMode
	// Prog is what the rig program does before its verdict.
	Prog RxProg
	// Fill is how many filler programs (see Filler) are attached to devices
	// of another namespace before the receiver. At Traffic.FullFill the
	// dispatcher is full when the receiver attaches, and the receiver is
	// called through the dispatcher's fallback, an indirect call.
	Fill int
	// Ext, when set, extends the rig for another family: with its own
	// program (Ext.Prog; Action and Prog are then unset), or with hooks
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
	return fmt.Sprintf("%s %s %s, %d fillers", r.Mode, r.Prog, r.Action, r.Fill)
}

// ownProg says the receiver brings its own program (Ext.Prog).
func (r Receiver) ownProg() bool { return r.Ext != nil && r.Ext.Prog != nil }

func (r Receiver) check() error {
	if r.GeneratorOnly() {
		return nil
	}
	if _, ok := r.Mode.Flags(); !ok {
		return fmt.Errorf("receiver mode %q: want %v", r.Mode, bpf.XDPModes)
	}
	if r.ownProg() {
		if r.Action != "" || r.Prog != "" {
			return fmt.Errorf("receiver %s brings its own program: it has no rig action (%q) or program (%q)", r.Ext.Name, r.Action, r.Prog)
		}
		return nil
	}
	if r.Action.verdict() == 0 {
		return fmt.Errorf("receiver action %q: want %v", r.Action, Actions)
	}
	if !slices.Contains(RxProgs, r.Prog) {
		return fmt.Errorf("receiver program %q: want %v", r.Prog, RxProgs)
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

// Receivers are progs/attach.c's programs: the receivers loaded once per
// action, since the action is a load-time constant, all sharing the maps
// of the first load.
type Receivers struct {
	objs bpf.AttachObjects              // every program with rx_action=drop, and every map
	rx   map[Action]*bpf.AttachPrograms // receivers per action; Drop's are objs'
}

// LoadReceivers loads them; Close closes them.
func LoadReceivers() (*Receivers, error) {
	spec, err := bpf.LoadAttach()
	if err != nil {
		return nil, err
	}
	rs := &Receivers{rx: map[Action]*bpf.AttachPrograms{}}
	if err := spec.LoadAndAssign(&rs.objs, nil); err != nil {
		return nil, fmt.Errorf("load attach programs: %w", err)
	}
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
			return nil, errors.Join(fmt.Errorf("set rx_action=%s: %w", action, err), rs.Close())
		}
		p := new(bpf.AttachPrograms)
		if err := s.LoadAndAssign(p, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
			return nil, errors.Join(fmt.Errorf("load receivers with rx_action=%s: %w", action, err), rs.Close())
		}
		rs.rx[action] = p
	}
	return rs, nil
}

// Close closes every program and map.
func (rs *Receivers) Close() error {
	var errs []error
	for action, p := range rs.rx {
		if action != Drop { // Drop's are objs'
			errs = append(errs, p.Close())
		}
	}
	rs.rx = nil
	return errors.Join(append(errs, rs.objs.Close())...)
}

// Prog is the rig's receiver program that does w and returns action (nil
// for an action or work the rig has no program for).
func (rs *Receivers) Prog(action Action, w RxProg) *ebpf.Program {
	p := rs.rx[action]
	if p == nil {
		return nil
	}
	return w.prog(p)
}

// RxCount is the receivers' per-CPU, per-queue frame counter.
func (rs *Receivers) RxCount() *ebpf.Map { return rs.objs.RxCount }
