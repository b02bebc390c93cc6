package rig

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"bpfbench/bpf"
	"bpfbench/bpf/host"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// DispatcherMax is BPF_DISPATCHER_MAX (include/linux/bpf.h): how many
// programs the XDP dispatcher calls directly. Programs past it are called
// through the dispatcher's fallback, the indirect call it replaces.
const DispatcherMax = 48

// Filler occupies the XDP dispatcher with distinct trivial programs attached
// to veth devices in a private namespace. Every XDP program attached to a
// netdev in any namespace takes a dispatcher slot (bpf_prog_change_xdp), so
// k fillers plus the measured program put k+1 programs in the dispatcher.
type Filler struct {
	ns    *host.Netns
	mode  link.XDPAttachFlags
	devs  []int
	progs []*ebpf.Program
	links []link.Link
}

// NewFiller creates a namespace with enough veth pairs for n programs and
// loads n distinct programs. mode is link.XDPGenericMode or
// link.XDPDriverMode (veth has native XDP). Close detaches and closes them
// and deletes the namespace.
func NewFiller(n int, mode link.XDPAttachFlags) (*Filler, error) {
	ns, err := host.CreateNetns()
	if err != nil {
		return nil, fmt.Errorf("create the fillers' namespace: %w", err)
	}
	f := &Filler{ns: ns, mode: mode}
	if err := f.load(n); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// load makes the veth pairs and loads the programs.
func (f *Filler) load(n int) error {
	pairs, err := f.ns.AddVeth((n+1)/2, 1)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		f.devs = append(f.devs, p.A.Index, p.B.Index)
	}
	f.devs = f.devs[:n]
	for i := range n {
		p, err := bpf.ReturnProgram(fmt.Sprintf("bpfbench_fill%d", i), bpf.XDPPass)
		if err != nil {
			return fmt.Errorf("load filler program %d: %w", i, err)
		}
		f.progs = append(f.progs, p)
	}
	return nil
}

// Close detaches the fillers, closes their programs and then deletes the
// namespace: an XDP link outlives its namespace, detached, until its fd is
// closed.
func (f *Filler) Close() error {
	var errs []error
	if err := f.Set(0); err != nil {
		errs = append(errs, fmt.Errorf("detach fillers: %w", err))
	}
	for _, p := range f.progs {
		p.Close()
	}
	f.progs = nil
	if err := f.ns.Close(); err != nil {
		errs = append(errs, fmt.Errorf("delete the fillers' namespace %s: %w", f.ns.Name, err))
	}
	return errors.Join(errs...)
}

// Attached is the number of fillers attached.
func (f *Filler) Attached() int { return len(f.links) }

// Set attaches or detaches fillers until exactly k are attached.
func (f *Filler) Set(k int) error {
	if k < 0 || k > len(f.progs) {
		return fmt.Errorf("filler count %d: want 0 to %d", k, len(f.progs))
	}
	for len(f.links) > k {
		last := len(f.links) - 1
		if err := f.links[last].Close(); err != nil {
			return fmt.Errorf("detach filler %d: %w", last, err)
		}
		f.links = f.links[:last]
	}
	return f.ns.Do(func() error {
		for len(f.links) < k {
			i := len(f.links)
			l, err := attachXDP(link.XDPOptions{Program: f.progs[i], Interface: f.devs[i], Flags: f.mode})
			if err != nil {
				return fmt.Errorf("attach filler %d to ifindex %d: %w", i, f.devs[i], err)
			}
			f.links = append(f.links, l)
		}
		return nil
	})
}

// Above reorders the fillers, none of them attached, so that as many as
// can lie above the JIT images of ps, lowest first: with all of them
// above, each of ps sorts first among any k attached (Rank 0), on every
// run and every kernel, and takes the same path through the dispatcher's
// binary search. Fillers below any of ps are replaced by new ones, up to
// 3n tries; it returns how many fillers lie above all of ps (all n, unless
// the allocator kept placing them below).
func (f *Filler) Above(ps ...*ebpf.Program) (int, error) {
	if len(f.links) > 0 {
		return 0, fmt.Errorf("reorder fillers: %d attached", len(f.links))
	}
	var at uintptr
	for _, p := range ps {
		a, err := bpf.JitAddr(p)
		if err != nil {
			return 0, err
		}
		at = max(at, a)
	}
	type prog struct {
		p    *ebpf.Program
		addr uintptr
	}
	var above, below []prog
	add := func(q *ebpf.Program) error {
		a, err := bpf.JitAddr(q)
		if err != nil {
			return err
		}
		if a > at {
			above = append(above, prog{q, a})
		} else {
			below = append(below, prog{q, a})
		}
		return nil
	}
	for _, q := range f.progs {
		if err := add(q); err != nil {
			return 0, err
		}
	}
	n := len(f.progs)
	for try := 0; len(above) < n && try < 3*n; try++ {
		q, err := bpf.ReturnProgram(fmt.Sprintf("bpfbench_fill%d", n+try), bpf.XDPPass)
		if err != nil {
			return 0, fmt.Errorf("load filler program: %w", err)
		}
		if err := add(q); err != nil {
			q.Close()
			return 0, err
		}
	}
	slices.SortFunc(above, func(a, b prog) int { return cmp.Compare(a.addr, b.addr) })
	all := append(above, below...)
	f.progs = f.progs[:0]
	for i, q := range all {
		if i < n {
			f.progs = append(f.progs, q.p)
		} else {
			q.p.Close()
		}
	}
	return min(len(above), n), nil
}

// Rank is where p sorts among the attached fillers by the address of its
// JIT'ed image: how many of them lie below it. The dispatcher's direct
// calls are a binary search over the programs' sorted addresses
// (arch_prepare_bpf_dispatcher), so the compares on p's path depend on its
// rank, and a rank that differs between two runs is a different path of
// the same occupancy, not noise.
func (f *Filler) Rank(p *ebpf.Program) (int, error) {
	at, err := bpf.JitAddr(p)
	if err != nil {
		return 0, err
	}
	rank := 0
	for i := range f.links {
		a, err := bpf.JitAddr(f.progs[i])
		if err != nil {
			return 0, err
		}
		if a < at {
			rank++
		}
	}
	return rank, nil
}
