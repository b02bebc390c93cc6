package bench

import (
	"fmt"
	"strings"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/host/tracefs"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// trampolineProgs are the numbers of fentry/fexit programs attached to one
// XDP program; the family adds the kernel's cap (probe.TrampolineCap).
var trampolineProgs = []int{1, 2, 4, 8, 16}

// trampolineAttach are the ways programs attach to the XDP program: none
// (the baseline), fentry, fexit, both (half of progs each), and fsession
// (one program in both lists; progs=1 only).
var trampolineAttach = []string{"none", "fentry", "fexit", "both", "fsession"}

// trampMaxChain is libxdp's limit of programs behind one dispatcher
// (MAX_DISPATCHER_ACTIONS), the number of stubs in progs/trampoline.c.
const trampMaxChain = 10

// trampHook is one row of the kernel-function table: a driver program
// that calls a kernel function in a bpf_loop, and a hook on that function
// or on a tracepoint it fires.
type trampHook struct {
	// target is what the driver calls: helper (bpf_get_numa_node_id, the
	// selftests' fentry/fexit/kprobe attach point) or kfunc
	// (bpf_modify_return_test_tp, which fires the bpf_trigger_tp
	// tracepoint and may be hooked by fmod_ret; Linux 6.10).
	target string
	attach string
	// progs are the hook programs in progs/trampoline.c, each attached
	// with link; none for the baseline.
	progs []string
	// feature names what attaching needs, for the skip message of a
	// kernel that lacks it.
	feature string
	// require is nil where the kernel has the hook, and otherwise why the
	// row skips (an error the skip rule reads: probe.SkipReason).
	require func() error
	// link attaches the hook program.
	link func(p *ebpf.Program) (link.Link, error)
}

// trampHooks: each target's first row is its baseline.
var trampHooks = []trampHook{
	{target: "helper", attach: "none"},
	{target: "helper", attach: "fentry", progs: []string{"helper_fentry"}, require: probe.Tracing, link: attachTracing},
	{target: "helper", attach: "fexit", progs: []string{"helper_fexit"}, require: probe.Tracing, link: attachTracing},
	{target: "helper", attach: "both", progs: []string{"helper_fentry", "helper_fexit"}, require: probe.Tracing, link: attachTracing},
	{target: "helper", attach: "fsession", progs: []string{"helper_fsession"}, require: requireAttach("BPF_TRACE_FSESSION", "Linux 7.0"), link: attachSession},
	{target: "helper", attach: "fentry-multi", progs: []string{"helper_fentry_multi"}, require: requireAttach("BPF_TRACE_FENTRY_MULTI", multiSince), link: func(p *ebpf.Program) (link.Link, error) {
		return bpf.AttachTracingMulti(p, bpf.AttachFEntryMulti, trampHelper)
	}},
	{target: "helper", attach: "fexit-multi", progs: []string{"helper_fexit_multi"}, require: requireAttach("BPF_TRACE_FEXIT_MULTI", multiSince), link: func(p *ebpf.Program) (link.Link, error) {
		return bpf.AttachTracingMulti(p, bpf.AttachFExitMulti, trampHelper)
	}},
	{target: "helper", attach: "kprobe", progs: []string{"helper_kprobe"}, require: probe.Kprobes, link: func(p *ebpf.Program) (link.Link, error) {
		return link.Kprobe(trampHelper, p, nil)
	}},
	{target: "helper", attach: "kretprobe", progs: []string{"helper_kretprobe"}, require: probe.Kprobes, link: func(p *ebpf.Program) (link.Link, error) {
		return link.Kretprobe(trampHelper, p, nil)
	}},
	{target: "helper", attach: "kprobe-multi", progs: []string{"helper_kprobe_multi"}, feature: "kprobe-multi links: Linux 5.18 with CONFIG_FPROBE", link: func(p *ebpf.Program) (link.Link, error) {
		return link.KprobeMulti(p, link.KprobeMultiOptions{Symbols: []string{trampHelper}})
	}},
	{target: "helper", attach: "kretprobe-multi", progs: []string{"helper_kretprobe_multi"}, feature: "kprobe-multi links: Linux 5.18 with CONFIG_FPROBE", link: func(p *ebpf.Program) (link.Link, error) {
		return link.KretprobeMulti(p, link.KprobeMultiOptions{Symbols: []string{trampHelper}})
	}},
	{target: "kfunc", attach: "none"},
	{target: "kfunc", attach: "rawtp", progs: []string{"kfunc_rawtp"}, link: func(p *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: trampTracepoint, Program: p})
	}},
	{target: "kfunc", attach: "tp_btf", progs: []string{"kfunc_tp_btf"}, link: attachTracing},
	{target: "kfunc", attach: "tp", progs: []string{"kfunc_tp"}, link: func(p *ebpf.Program) (l link.Link, err error) {
		err = tracefs.Do(func() error {
			l, err = link.Tracepoint(trampTracepointGroup, trampTracepoint, p, nil)
			return err
		})
		return l, err
	}},
	{target: "kfunc", attach: "fmod_ret", progs: []string{"kfunc_fmod_ret"}, require: probe.Tracing, link: attachTracing},
}

const (
	trampHelper          = "bpf_get_numa_node_id"
	trampKfunc           = "bpf_modify_return_test_tp"
	trampTracepoint      = "bpf_trigger_tp"
	trampTracepointGroup = "bpf_test_run"
)

// runs are the runs of h's programs and of their session returns per
// call of the function: an fsession program runs at the entry and at
// the return.
func (h trampHook) runs() (hooks, returns uint64) {
	if h.attach == "fsession" {
		return 2, 1
	}
	return uint64(len(h.progs)), 0
}

// multiSince says which kernels have tracing multi-links: Jiri Olsa's
// series of 2026, in 7.3 of the matrix and not in 6.12.
const multiSince = "tracing multi-links of 2026: Linux 7.3 has them"

// requireAttach is a trampHook's require for an attach type the kernel
// names in its BTF since a release (probe.HaveAttachType), and for
// tracing programs.
func requireAttach(name, since string) func() error {
	return func() error {
		if err := probe.Tracing(); err != nil {
			return err
		}
		return probe.HaveAttachType(name, since)
	}
}

// trampDrivers are the driver program of each trampHook target.
var trampDrivers = map[string]string{"helper": "drive_helper", "kfunc": "drive_kfunc"}

// BenchmarkTrampoline answers: what does a BPF trampoline cost the code it
// hooks, and how does it compare with the other ways to hook a kernel
// function?
//
//   - target=xdp/attach=fentry|fexit|both/progs=N: N tracing programs
//     attached through the trampoline the kernel builds for an XDP program
//     (Linux 5.5), against attach=none, the same program unhooked; up to
//     BPF_MAX_TRAMP_LINKS, the kernel's cap per target. delta-ns/prog is
//     the increment per attached program.
//   - target=xdp|helper/attach=fsession/progs=1: one fsession program
//     (Linux 7.0), in both lists, against attach=both/progs=2.
//   - target=xdp/attach=freplace/chain=N: libxdp's multi-program attach,
//     a dispatcher program calling N global functions that freplace (Linux
//     5.6) replaced with small XDP programs, against attach=inline/chain=N,
//     the same work in one program. delta-ns/prog is the cost per link.
//   - target=helper|kfunc/attach=.../progs=1: the kernel selftests' trigger
//     benchmark. A raw_tp driver run by test_run calls a kernel function in
//     a bpf_loop (bpf_get_numa_node_id, or bpf_modify_return_test_tp which
//     fires the bpf_trigger_tp tracepoint); ns/op is per call, and
//     delta-ns/op what the hook adds to each: fentry, fexit, fmod_ret
//     (trampolines), kprobe and kretprobe (ftrace-based kprobes),
//     kprobe-multi and kretprobe-multi (fprobe), fentry-multi and
//     fexit-multi (tracing multi-links), rawtp, tp_btf and tp
//     (tracepoints: raw, BTF-typed, perf). The hook is attached and
//     detached between rounds, so baseline and hook alternate.
//
// The rows are measured together (measure.Family): every row is set up
// once, then visited a round at a time in a shuffled order; a kernel
// function's hook is attached only while its own row's variant runs.
// Each hook is checked to have run once per call (per attached program for
// the XDP rows), and the baselines not to have run any.
func BenchmarkTrampoline(b *testing.B) {
	f := newTrampolineFamily(b)
	rows := []measure.Row{{Name: "target=xdp/attach=none/progs=0", Variant: f.xdpLoop(f.core.Target, 0)}}
	for _, attach := range trampolineAttach[1:] {
		for _, n := range append(trampolineProgs, probe.TrampolineCap()) {
			if attach == "both" && n%2 != 0 || attach == "fsession" && n != 1 {
				continue
			}
			rows = append(rows, f.row(fmt.Sprintf("target=xdp/attach=%s/progs=%d", attach, n), func() (measure.Row, error) {
				return f.xdpHooksRow(attach, n)
			}))
		}
	}
	for n := 1; n <= trampMaxChain; n++ {
		for _, attach := range []string{"inline", "freplace"} {
			rows = append(rows, f.row(fmt.Sprintf("target=xdp/attach=%s/chain=%d", attach, n), func() (measure.Row, error) {
				return f.chainRow(attach, n)
			}))
		}
	}
	hooks := &trampKernelHooks{}
	for _, h := range trampHooks {
		rows = append(rows, f.row(fmt.Sprintf("target=%s/attach=%s/progs=%d", h.target, h.attach, len(h.progs)), func() (measure.Row, error) {
			return f.kernelHookRow(h, hooks)
		}))
	}
	// Registered last, so it runs first: the XDP program the family
	// shares is back in the dispatcher before the rows' copies close.
	b.Cleanup(func() {
		if err := f.holder.Hold(f.core.Target); err != nil {
			b.Error(err)
		}
	})
	measure.Family(b, benchOptions(), rows)
}

// row is the row name, which setup sets up when -test.bench selects it:
// attaching 38 programs for a row nobody asked for costs seconds in an
// emulated guest. A setup's error is the row's (measure.Row.Err): its
// sub-benchmark skips or fails by it, and the family's other rows are
// measured. What a setup attaches is released when the family ends, so
// that it stays attached while the family measures its rows together.
func (f *trampolineFamily) row(name string, setup func() (measure.Row, error)) measure.Row {
	return measure.Row{Name: name, Setup: setup}
}

// trampolineFamily holds what every row shares: the collection spec, the
// global counters (one .bss map every program of the family uses), and
// the unhooked XDP program, held in the dispatcher.
type trampolineFamily struct {
	spec *ebpf.CollectionSpec
	core struct {
		Bss      *ebpf.Map      `ebpf:".bss"`
		Target   *ebpf.Program  `ebpf:"target"`
		Runs     *ebpf.Variable `ebpf:"runs"`
		HookRuns *ebpf.Variable `ebpf:"hook_runs"`
		// SessionReturns counts the fsession programs' runs at a return.
		SessionReturns *ebpf.Variable `ebpf:"session_returns"`
		ChainRuns      *ebpf.Variable `ebpf:"chain_runs"`
		Calls          *ebpf.Variable `ebpf:"calls"`
		Iterations     *ebpf.Variable `ebpf:"iterations"`
	}
	holder *rig.Holder
	frame  []byte
	// tb is the family's benchmark (or a test's): what the rows load and
	// attach is released at its end.
	tb testing.TB
}

func newTrampolineFamily(tb testing.TB) *trampolineFamily {
	tb.Helper()
	host.RequireRoot(tb)
	f := &trampolineFamily{tb: tb}
	var err error
	if f.spec, err = bpf.LoadTrampoline(); err != nil {
		tb.Fatal(err)
	}
	record.Require(tb, f.spec.LoadAndAssign(&f.core, nil), "load the trampoline family's XDP program")
	tb.Cleanup(func() {
		f.core.Target.Close()
		f.core.Bss.Close()
	})
	if f.frame, err = bpf.UDPFrame(64); err != nil {
		tb.Fatal(err)
	}
	h, err := rig.NewHolder(host.NewNetns(tb), f.core.Target)
	f.holder = testutil.Must(tb, record.Require, "dispatcher holder", h, err)
	return f
}

// load loads a fresh copy of program name, sharing the family's counters,
// closed when the family ends. edit may change the spec first (attach
// target, constants).
func (f *trampolineFamily) load(name string, edit func(*ebpf.CollectionSpec) error) (*ebpf.Program, error) {
	p, err := f.tryLoad(name, edit)
	if err != nil {
		return nil, err
	}
	f.tb.Cleanup(func() { p.Close() })
	return p, nil
}

// tryLoad is load leaving the program's closing to the caller. A load
// the host's policy refused says so (probe.ClassifyLoad).
func (f *trampolineFamily) tryLoad(name string, edit func(*ebpf.CollectionSpec) error) (*ebpf.Program, error) {
	cs := f.spec.Copy()
	for n := range cs.Programs {
		if n != name {
			delete(cs.Programs, n)
		}
	}
	if edit != nil {
		if err := edit(cs); err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
	}
	if attach, ok := rawAttach(cs.Programs[name]); ok {
		ps := cs.Programs[name]
		p, err := bpf.LoadTracing(bpf.TracingLoad{Spec: ps, Attach: attach, Maps: map[string]*ebpf.Map{".bss": f.core.Bss}, Target: ps.AttachTarget})
		if err != nil {
			return nil, fmt.Errorf("load %s (%s): %w", name, ps.SectionName, probe.ClassifyLoad(err, ps))
		}
		return p, nil
	}
	coll, err := ebpf.NewCollectionWithOptions(cs, ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{".bss": f.core.Bss},
	})
	if err != nil {
		return nil, fmt.Errorf("load %s (%s): %w", name, cs.Programs[name].SectionName, probe.ClassifyLoad(err, cs.Programs[name]))
	}
	defer coll.Close()
	return coll.DetachProgram(name), nil
}

// rawAttach is the attach type of ps where cilium/ebpf cannot load it
// (bpf.LoadTracing): fsession, and the multi-link sections it does not
// read.
func rawAttach(ps *ebpf.ProgramSpec) (ebpf.AttachType, bool) {
	switch {
	case ps.Type == ebpf.Tracing && ps.AttachType == bpf.AttachFSession:
		return bpf.AttachFSession, true
	case strings.HasPrefix(ps.SectionName, "fentry.multi/"):
		return bpf.AttachFEntryMulti, true
	case strings.HasPrefix(ps.SectionName, "fexit.multi/"):
		return bpf.AttachFExitMulti, true
	}
	return 0, false
}

// xdpLoop is the test_run loop of XDP program p, held in the dispatcher,
// whose hooks must run hooks times per run.
func (f *trampolineFamily) xdpLoop(p *ebpf.Program, hooks uint64) *testrun.Loop {
	return &testrun.Loop{
		Prog: p, Data: f.frame, Runs: f.core.Runs, Switch: f.holder.Held(p),
		Counters: []testrun.Counter{{Name: "hook_runs", Var: f.core.HookRuns, PerRepeat: hooks}},
	}
}
