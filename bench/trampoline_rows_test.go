package bench

// The Trampoline family's rows: hooks on an XDP program's own copy, chains
// of freplace, and hooks on kernel functions (each row's own attached and
// every other row's detached before its calls, since a hook on a kernel
// function fires for every caller), with the drivers that call the
// function in a bpf_loop.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
)

// trampHookSwitch attaches and detaches one kernel hook; attach loads
// fresh programs each time (see benchXDPHooks), so it also works where a
// program cannot be attached twice.
type trampHookSwitch struct {
	// attach loads and links the hook's programs; the closer unlinks and
	// closes them.
	attach func() (io.Closer, error)
	on     io.Closer
}

func (h *trampHookSwitch) set() error {
	if h.on != nil {
		return nil
	}
	on, err := h.attach()
	if err != nil {
		return err
	}
	h.on = on
	return nil
}

func (h *trampHookSwitch) unset() error {
	if h.on == nil {
		return nil
	}
	err := h.on.Close()
	h.on = nil
	if err != nil {
		return fmt.Errorf("detach hook: %w", err)
	}
	return nil
}

// closers closes each of its closers, last first.
type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i].Close())
	}
	return errors.Join(errs...)
}

// trampKernelHooks are the hooks of the family's kernel-function rows.
// A hook on a kernel function or tracepoint fires for every caller, the
// other rows' drivers too, so each loop of those rows attaches its own
// hook, if any, and detaches every other (only).
type trampKernelHooks struct{ all []*trampHookSwitch }

// only is a Prepare that leaves sw (none: nil) the only hook attached.
func (k *trampKernelHooks) only(sw *trampHookSwitch) func() error {
	return func() error {
		for _, o := range k.all {
			if o != sw {
				if err := o.unset(); err != nil {
					return err
				}
			}
		}
		if sw == nil {
			return nil
		}
		return sw.set()
	}
}

// kernelHookRow is the row of the driver of h.target with and without h.
func (f *trampolineFamily) kernelHookRow(h trampHook, hooks *trampKernelHooks) (measure.Row, error) {
	drv, err := f.driver(h.target)
	if err != nil {
		return measure.Row{}, err
	}
	loop := func(hooks, returns uint64, prepare func() error) *testrun.Loop {
		return &testrun.Loop{
			Prog: drv, Runs: f.core.Calls, Iterations: f.core.Iterations, Prepare: prepare,
			Counters: []testrun.Counter{
				{Name: "driver runs", Var: f.core.Runs, PerCall: 1},
				{Name: "hook_runs", Var: f.core.HookRuns, PerRepeat: hooks},
				{Name: "session_returns", Var: f.core.SessionReturns, PerRepeat: returns},
			},
		}
	}
	if len(h.progs) == 0 {
		return measure.Row{Variant: loop(0, 0, hooks.only(nil))}, nil
	}
	if h.require != nil {
		if err := h.require(); err != nil {
			return measure.Row{}, err
		}
	}
	// One load first, to tell a refused or unsupported load from a
	// failing one before anything is attached.
	for _, prog := range h.progs {
		if _, err := f.load(prog, nil); err != nil {
			return measure.Row{}, err
		}
	}
	sw := &trampHookSwitch{attach: func() (io.Closer, error) {
		var on closers
		for _, prog := range h.progs {
			p, err := f.tryLoad(prog, nil)
			if err != nil {
				return nil, errors.Join(err, on.Close())
			}
			on = append(on, p)
			l, err := h.link(p)
			if err != nil {
				return nil, errors.Join(err, on.Close())
			}
			on = append(on, l)
		}
		return on, nil
	}}
	f.tb.Cleanup(func() {
		if err := sw.unset(); err != nil {
			f.tb.Error(err)
		}
	})
	doing := "attach " + strings.Join(h.progs, " and ")
	if h.feature != "" {
		doing += " (" + h.feature + ")"
	}
	if err := sw.set(); err != nil {
		return measure.Row{}, fmt.Errorf("%s: %w", doing, err)
	}
	if err := failAt("trampoline-attached"); err != nil {
		return measure.Row{}, err
	}
	if err := sw.unset(); err != nil {
		return measure.Row{}, fmt.Errorf("detach %s: %w", strings.Join(h.progs, " and "), err)
	}
	hooks.all = append(hooks.all, sw)
	runs, returns := h.runs()
	return measure.Row{Variant: loop(runs, returns, hooks.only(sw)), Base: loop(0, 0, hooks.only(nil))}, nil
}

// driver loads the driver program that calls target.
func (f *trampolineFamily) driver(target string) (*ebpf.Program, error) {
	if err := features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnLoop); err != nil {
		return nil, fmt.Errorf("bpf_loop in a raw_tp program (Linux 5.17): %w", err)
	}
	name := trampDrivers[target]
	if target == "kfunc" {
		if err := probe.HaveKfunc(trampKfunc); err != nil {
			return nil, fmt.Errorf("driver %s needs the kfunc %s and its tracepoint %s (Linux 6.10): %w", name, trampKfunc, trampTracepoint, err)
		}
	}
	return f.load(name, nil)
}

func attachTracing(p *ebpf.Program) (link.Link, error) {
	return link.AttachTracing(link.TracingOptions{Program: p})
}

// attachSession attaches an fsession program loaded with its target:
// link.AttachTracing refuses the attach type, a raw link takes it.
func attachSession(p *ebpf.Program) (link.Link, error) {
	return link.AttachRawLink(link.RawLinkOptions{Program: p, Attach: bpf.AttachFSession})
}

// attachTo is a load's edit that attaches program prog to function fn
// of the BPF program tgt.
func attachTo(prog string, tgt *ebpf.Program, fn string) func(*ebpf.CollectionSpec) error {
	return func(cs *ebpf.CollectionSpec) error {
		cs.Programs[prog].AttachTarget = tgt
		cs.Programs[prog].AttachTo = fn
		return nil
	}
}

// xdpHooksRow attaches n fentry/fexit programs to a fresh copy of the
// XDP program, to be measured against the unhooked one.
func (f *trampolineFamily) xdpHooksRow(attach string, n int) (measure.Row, error) {
	if err := probe.Tracing(); err != nil {
		return measure.Row{}, err
	}
	hooks, attachOne := uint64(n), attachTracing
	if attach == "fsession" {
		if err := probe.HaveAttachType("BPF_TRACE_FSESSION", "Linux 7.0"); err != nil {
			return measure.Row{}, err
		}
		hooks, attachOne = uint64(2*n), attachSession
	}
	tgt, err := f.load("target", nil)
	if err != nil {
		return measure.Row{}, err
	}
	for i := range n {
		prog := "on_entry"
		switch {
		case attach == "fsession":
			prog = "on_session"
		case attach == "fexit" || (attach == "both" && i >= n/2):
			prog = "on_exit"
		}
		// A fresh program per attachment: one whose target is a BPF
		// program cannot be attached again once its link is closed.
		p, err := f.load(prog, attachTo(prog, tgt, "target"))
		if err != nil {
			return measure.Row{}, err
		}
		l, err := attachOne(p)
		if err != nil {
			return measure.Row{}, fmt.Errorf("attach %s program %d of %d to an XDP program: %w", prog, i+1, n, err)
		}
		f.tb.Cleanup(func() { l.Close() })
	}
	if err := failAt("trampoline-attached"); err != nil {
		return measure.Row{}, err
	}
	v := f.xdpLoop(tgt, hooks)
	if attach == "fsession" {
		v.Counters = append(v.Counters, testrun.Counter{Name: "session_returns", Var: f.core.SessionReturns, PerRepeat: uint64(n)})
	}
	return measure.Row{Variant: v, Base: f.xdpLoop(f.core.Target, 0), Report: perTrampProg(n)}, nil
}

// chainRow loads a dispatcher whose n stubs freplace replaced
// (attach=freplace), measured against one program doing the same work
// (attach=inline, measured alone).
func (f *trampolineFamily) chainRow(attach string, n int) (measure.Row, error) {
	// The inline rows are the freplace rows' baselines: without freplace
	// they answer nothing BenchmarkXDP does not.
	if err := probe.Tracing(); err != nil {
		return measure.Row{}, err
	}
	setN := numProgs(n)
	loop := func(p *ebpf.Program) *testrun.Loop {
		l := f.xdpLoop(p, 0)
		l.Counters = append(l.Counters, testrun.Counter{Name: "chain_runs", Var: f.core.ChainRuns, PerRepeat: uint64(n)})
		return l
	}
	single, err := f.load("single", setN)
	if err != nil {
		return measure.Row{}, err
	}
	if attach == "inline" {
		return measure.Row{Variant: loop(single)}, nil
	}
	disp, err := f.load("dispatcher", setN)
	if err != nil {
		return measure.Row{}, err
	}
	if err := f.replaceStubs(disp, n); err != nil {
		return measure.Row{}, fmt.Errorf("freplace: %w", err)
	}
	if err := failAt("trampoline-attached"); err != nil {
		return measure.Row{}, err
	}
	return measure.Row{Variant: loop(disp), Base: loop(single), Report: perTrampProg(n)}, nil
}

// numProgs sets the freplace dispatcher's (and the single program's)
// number of stubs, num_progs.
func numProgs(n int) func(*ebpf.CollectionSpec) error {
	return func(cs *ebpf.CollectionSpec) error {
		return cs.Variables["num_progs"].Set(uint32(n))
	}
}

// replaceStubs replaces disp's first n stubs (prog0, prog1, ...) with the
// chained program (freplace), detached when the family ends.
func (f *trampolineFamily) replaceStubs(disp *ebpf.Program, n int) error {
	for i := range n {
		stub := fmt.Sprintf("prog%d", i)
		p, err := f.load("chained", attachTo("chained", disp, stub))
		if err != nil {
			return err
		}
		l, err := link.AttachFreplace(nil, "", p)
		if err != nil {
			return fmt.Errorf("%s: %w", stub, err)
		}
		f.tb.Cleanup(func() { l.Close() })
	}
	return nil
}

// perTrampProg reports the delta per attached program, of n.
func perTrampProg(n int) func(b *testing.B, r measure.Result) []measure.Figure {
	return func(b *testing.B, r measure.Result) []measure.Figure {
		if !r.HaveDelta {
			return nil
		}
		return []measure.Figure{{Unit: "delta-ns/prog", Value: r.Delta.Value / float64(n)}}
	}
}
