package rig

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"bpfbench/bpf"
	"bpfbench/bpf/host"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Holder keeps one XDP program at a time attached to the loopback device of
// a private namespace, so that the program sits in the XDP dispatcher
// between test_run calls.
//
// Why: an XDP test_run with repeat > 1 adds the program to the dispatcher
// for the duration of the call (net/bpf/test_run.c). For a program that is
// not attached anywhere that means rebuilding the dispatcher image twice per
// call, far longer than the loop and varying enough to swamp it
// (docs/method.md#how-a-number-is-made); for a program already in the
// dispatcher it is a reference count.
// Only the held program is in the dispatcher while it is measured, so the
// dispatcher holds exactly one program, as it does for xdp_perf.
type Holder struct {
	ns   *host.Netns
	link link.Link // nil while released
	cur  *ebpf.Program
	// flip is a spare program. Each dispatcher change writes the new image
	// into the other half of the dispatcher's page, so strictly alternating
	// between two programs would always run each from the same half;
	// switching through flip now and then breaks that pattern.
	flip *ebpf.Program
	rng  *rand.Rand
}

// LoopbackIfindex is the ifindex of lo in every new network namespace.
const LoopbackIfindex = 1

// NewHolder attaches first to lo in ns (generic mode: lo has no native
// XDP). Close detaches it; ns stays the caller's, to delete after Close:
// an XDP link outlives its namespace, detached, until its fd is closed.
func NewHolder(ns *host.Netns, first *ebpf.Program) (*Holder, error) {
	flip, err := bpf.ReturnProgram("bpfbench_flip", bpf.XDPPass)
	if err != nil {
		return nil, fmt.Errorf("load dispatcher flip program: %w", err)
	}
	h := &Holder{ns: ns, flip: flip, rng: rand.New(rand.NewPCG(1, 2))}
	if err := h.Hold(first); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	return h, nil
}

// Close detaches the held program and closes the flip program.
func (h *Holder) Close() error {
	err := h.Release()
	if h.flip != nil {
		h.flip.Close()
		h.flip = nil
	}
	return err
}

// Release detaches the held program: the next test_run of an XDP program
// then adds it to an empty dispatcher and removes it again, rebuilding the
// dispatcher image twice per call.
func (h *Holder) Release() error {
	if h.link == nil {
		return nil
	}
	err := h.link.Close()
	h.link, h.cur = nil, nil
	if err != nil {
		return fmt.Errorf("detach held XDP program: %w", err)
	}
	return nil
}

// Hold makes p the attached program.
func (h *Holder) Hold(p *ebpf.Program) error {
	if p == h.cur {
		return nil
	}
	if h.link == nil {
		return h.ns.Do(func() (err error) {
			h.link, err = attachXDP(link.XDPOptions{
				Program:   p,
				Interface: LoopbackIfindex,
				Flags:     link.XDPGenericMode,
			})
			if err != nil {
				return fmt.Errorf("attach XDP to lo in %s: %w", h.ns.Name, err)
			}
			h.cur = p
			return nil
		})
	}
	if h.rng.IntN(2) == 0 {
		if err := h.link.Update(h.flip); err != nil {
			return fmt.Errorf("update XDP link to flip program: %w", err)
		}
	}
	if err := h.link.Update(p); err != nil {
		return fmt.Errorf("update XDP link: %w", err)
	}
	h.cur = p
	return nil
}

// Held returns a state change for a Loop that holds p: a Loop.Switch, run
// on the other CPU, so that what the kernel defers from updating the
// dispatcher does not land on the measuring one.
func (h *Holder) Held(p *ebpf.Program) func() error {
	return func() error { return h.Hold(p) }
}
