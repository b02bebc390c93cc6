package bench

import (
	"errors"
	"fmt"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

// maxChain is the longest tail call chain progs/call.c builds: its program
// arrays have 32 slots. The kernel allows 33 tail calls per run
// (MAX_TAIL_CALL_CNT).
const maxChain = 32

// callVariants are the ways the call family reaches the work, baseline
// (inline) first. hops is how many calls of that kind reach it per run.
var callVariants = []struct {
	call string
	hops int
}{
	{"inline", 1},
	{"bpf2bpf", 1},
	{"tailcall", 1}, {"tailcall", 2}, {"tailcall", 4}, {"tailcall", 8}, {"tailcall", 16}, {"tailcall", 32},
	{"tailcall-direct", 1}, {"tailcall-direct", 32},
}

// callFamily holds progs/call.c's programs, loaded -bpfbench.layouts
// times, and the measured entry program in the XDP dispatcher.
type callFamily struct {
	// coll is the first load, layouts all of them (coll first).
	coll    *callLoad
	layouts []*callLoad
	holder  *rig.Holder
	frame   []byte
}

// callLoad is one load of progs/call.c: its programs, program arrays and
// counters, and the length each program array's chain has (by kind).
type callLoad struct {
	*ebpf.Collection
	chains map[string]int
}

func newCallFamily(tb testing.TB) *callFamily {
	tb.Helper()
	host.RequireRoot(tb)
	spec, err := bpf.LoadCall()
	if err != nil {
		tb.Fatal(err)
	}
	f := &callFamily{}
	for range layouts() {
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			tb.Fatalf("load call programs: %v", err)
		}
		tb.Cleanup(coll.Close)
		f.layouts = append(f.layouts, &callLoad{Collection: coll, chains: map[string]int{}})
	}
	f.coll = f.layouts[0]
	if f.frame, err = bpf.UDPFrame(64); err != nil {
		tb.Fatal(err)
	}
	h, err := rig.NewHolder(host.NewNetns(tb), f.coll.prog(tb, bpf.CallProgInlineEntry))
	f.holder = testutil.Must(tb, record.Require, "dispatcher holder", h, err)
	return f
}

func (c *callLoad) prog(tb testing.TB, name string) *ebpf.Program {
	tb.Helper()
	p := c.Programs[name]
	if p == nil {
		tb.Fatalf("progs/call.c has no program %s", name)
	}
	return p
}

func (c *callLoad) variable(tb testing.TB, name string) *ebpf.Variable {
	tb.Helper()
	v := c.Variables[name]
	if v == nil {
		tb.Fatalf("progs/call.c has no global %s", name)
	}
	return v
}

// kind is the suffix of a tail call variant's programs and program array.
func kind(call string) string {
	if call == "tailcall-direct" {
		return "const"
	}
	return "var"
}

// setChain fills the program array of call's tail call kind in every load
// so that its entry reaches the work after n tail calls: slots 0..n-2 hold
// hops that tail-call the next slot, slot n-1 the end program, the rest
// nothing. The direct kind's JITed jumps are patched as the slots change
// (outside the timed region).
func (f *callFamily) setChain(tb testing.TB, call string, n int) {
	tb.Helper()
	for _, c := range f.layouts {
		c.setChain(tb, call, n)
	}
}

func (c *callLoad) setChain(tb testing.TB, call string, n int) {
	tb.Helper()
	if err := c.chain(call, n); err != nil {
		tb.Fatal(err)
	}
}

// chain makes call's program array hold a chain of n tail calls, if it
// does not already.
func (c *callLoad) chain(call string, n int) error {
	k := kind(call)
	if c.chains[k] == n {
		return nil
	}
	m := c.Maps["chain_"+k]
	if m == nil {
		return fmt.Errorf("progs/call.c has no map chain_%s", k)
	}
	if n < 1 || n > maxChain {
		return fmt.Errorf("chain of %d tail calls: want 1 to %d", n, maxChain)
	}
	delete(c.chains, k)
	for slot := range maxChain {
		var err error
		switch {
		case slot < n-1:
			err = c.put(m, slot, fmt.Sprintf("hop_%s_%d", k, slot))
		case slot == n-1:
			err = c.put(m, slot, "end_"+k)
		default:
			if err = m.Delete(uint32(slot)); errors.Is(err, ebpf.ErrKeyNotExist) {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("set slot %d of chain_%s for %d tail calls: %w", slot, k, n, err)
		}
	}
	c.chains[k] = n
	return nil
}

func (c *callLoad) put(m *ebpf.Map, slot int, prog string) error {
	p := c.Programs[prog]
	if p == nil {
		return fmt.Errorf("progs/call.c has no program %s", prog)
	}
	return m.Put(uint32(slot), p)
}

// loop returns the test_run loop of variant call with hops calls in every
// load: its entry program held in the dispatcher, its chain of tail calls
// set before each measurement (outside the timed region, where the direct
// kind's JITed jumps are patched), its run counter (tail_runs for the
// tail call entries), and the hops counter, which must count hops per
// run: a broken chain cannot pass for a fast one.
func (f *callFamily) loop(tb testing.TB, call string, hops int) *testrun.Loop {
	tb.Helper()
	entry, runs := "inline_entry", "runs"
	tail := false
	switch call {
	case "inline":
	case "bpf2bpf":
		entry = "bpf2bpf_entry"
	case "tailcall", "tailcall-direct":
		entry, runs, tail = "tail_entry_"+kind(call), "tail_runs", true
	default:
		tb.Fatalf("unknown call variant %s", call)
	}
	return withLayouts(f.layouts, func(c *callLoad) *testrun.Loop {
		p := c.prog(tb, entry)
		held := f.holder.Held(p)
		l := &testrun.Loop{Prog: p, Data: f.frame, Runs: c.variable(tb, runs), Switch: held,
			Counters: []testrun.Counter{{Name: "hops", Var: c.variable(tb, "hops"), PerRepeat: uint64(hops)}}}
		if tail {
			l.Switch = func() error {
				if err := c.chain(call, hops); err != nil {
					return err
				}
				return held()
			}
		}
		return l
	})
}

// counters reads runs, tail_runs and hops, summed over the loads.
func (f *callFamily) counters(tb testing.TB) (runs, tailRuns, hops uint64) {
	tb.Helper()
	for _, l := range f.layouts {
		for _, c := range []struct {
			name string
			v    *uint64
		}{{"runs", &runs}, {"tail_runs", &tailRuns}, {"hops", &hops}} {
			var n uint64
			if err := l.variable(tb, c.name).Get(&n); err != nil {
				tb.Fatalf("read %s: %v", c.name, err)
			}
			*c.v += n
		}
	}
	return runs, tailRuns, hops
}

// BenchmarkCall answers: what does it cost to reach the same work through a
// bpf-to-bpf call, a tail call, or a chain of tail calls, instead of
// inline, on the running kernel? It makes the cost of an indirect jump
// (retpoline'd where retpolines are on) visible without a reboot, next to
// its direct counterpart (docs/claims.md §1: ~10-12 ns per retpoline).
//
// The work is counting a hop in a global and returning XDP_DROP
// (progs/call.c). Variants:
//
//   - call=inline: the work in the entry program (the baseline).
//   - call=bpf2bpf: the entry calls a global noinline function, which the
//     verifier checks on its own; the JIT emits a direct call (with the
//     callee's prologue and epilogue).
//   - call=tailcall/hops=N: a chain of N tail calls through a
//     BPF_MAP_TYPE_PROG_ARRAY with indices the verifier cannot know: per
//     hop the JIT emits the bounds check, the tail call count check, the
//     NULL check and an indirect jump, which goes through a retpoline when
//     retpolines are on.
//   - call=tailcall-direct/hops=N: the same chain with constant indices:
//     since 5.5 the verifier records them and the JIT emits a direct jump,
//     patched whenever the slot changes. tailcall minus tailcall-direct at
//     the same hops is the indirect jump's cost.
//
// The entry programs are XDP programs held in the dispatcher (attached to lo
// in a private namespace, see rig.Holder), as in BenchmarkXDP: each call
// reaches the entry through the same direct call, so the deltas are the
// call mechanisms alone, and the family's inline baseline is BenchmarkXDP's
// drop plus one counter. (A SCHED_CLS loop would avoid the dispatcher but
// add a retpoline'd call of the entry to every variant.)
//
// Besides ns/op and delta-ns/op (against inline), each variant reports
// ns/call, its delta divided by hops; the per-hop increment is the slope
// of ns/op over hops. Every measurement checks that every run did its
// work once per hop (the hops counter), so a broken chain cannot pass for
// a fast one. The rows are measured together (measure.Family), each
// setting its chain before its calls.
func BenchmarkCall(b *testing.B) {
	f := newCallFamily(b)
	var rows []measure.Row
	for _, v := range callVariants {
		// Each row has its own loops: a loop keeps its layout and its
		// recent short calls, and the rows' rounds interleave.
		rows = append(rows, measure.Row{Name: fmt.Sprintf("call=%s/hops=%d", v.call, v.hops), Setup: func() (measure.Row, error) {
			row := measure.Row{Variant: f.loop(b, v.call, v.hops)}
			if v.call != "inline" {
				row.Base = f.loop(b, "inline", 1)
				row.Report = func(b *testing.B, r measure.Result) []measure.Figure {
					if !r.HaveDelta {
						return nil
					}
					return []measure.Figure{{Unit: "ns/call", Value: r.Delta.Value / float64(v.hops)}}
				}
			}
			return row, nil
		}})
	}
	measure.Family(b, benchOptions(), rows)
}

// checkHops checks that the work ran once per run of the inline and
// bpf2bpf entries and hops times per run of a tail call entry.
func checkHops(runs, tailRuns, hops uint64, call string, n int) error {
	tailHops := uint64(0)
	if call == "tailcall" || call == "tailcall-direct" {
		tailHops = uint64(n)
		if tailRuns == 0 {
			return fmt.Errorf("call=%s/hops=%d: the tail call entry never ran", call, n)
		}
	} else if tailRuns != 0 {
		return fmt.Errorf("call=%s: a tail call entry ran %d times", call, tailRuns)
	}
	if want := runs + tailHops*tailRuns; hops != want {
		return fmt.Errorf("call=%s/hops=%d: the work ran %d times for %d runs and %d tail call entries, want %d: a chain broke",
			call, n, hops, runs, tailRuns, want)
	}
	return nil
}

// TestCallChains runs every variant of the call family once and checks the
// work ran as often as the chain is long, and that a chain with a missing
// slot is noticed.
func TestCallChains(t *testing.T) {
	f := newCallFamily(t)
	for _, v := range callVariants {
		if v.call == "tailcall" || v.call == "tailcall-direct" {
			f.setChain(t, v.call, v.hops)
		}
		l := f.loop(t, v.call, v.hops)
		if err := l.Switch(); err != nil {
			t.Fatal(err)
		}
		runs0, tail0, hops0 := f.counters(t)
		ret, err := l.Prog.Run(&ebpf.RunOptions{Data: f.frame, Repeat: 10})
		if err != nil {
			t.Fatalf("call=%s/hops=%d: test_run: %v", v.call, v.hops, err)
		}
		if ret != 1 { // XDP_DROP
			t.Errorf("call=%s/hops=%d returned %d, want XDP_DROP (1)", v.call, v.hops, ret)
		}
		runs1, tail1, hops1 := f.counters(t)
		if err := checkHops(runs1-runs0, tail1-tail0, hops1-hops0, v.call, v.hops); err != nil {
			t.Error(err)
		}
	}

	// A chain of 4 with slot 2 emptied stops after 2 hops: the check must
	// say so.
	f.setChain(t, "tailcall", 4)
	if err := f.coll.Maps["chain_var"].Delete(uint32(2)); err != nil {
		t.Fatal(err)
	}
	l := f.loop(t, "tailcall", 4)
	runs0, tail0, hops0 := f.counters(t)
	if _, err := l.Prog.Run(&ebpf.RunOptions{Data: f.frame, Repeat: 10}); err != nil {
		t.Fatal(err)
	}
	runs1, tail1, hops1 := f.counters(t)
	if err := checkHops(runs1-runs0, tail1-tail0, hops1-hops0, "tailcall", 4); err == nil {
		t.Error("a chain broken at slot 2 passed the hop check")
	}
	// The benchmark's own check, the hops counter of every measurement.
	err := sched.Pinned(benchOptions().CPU, func() error {
		_, err := l.Measure(10000)
		return err
	})
	if !errors.Is(err, testrun.ErrRunCount) {
		t.Errorf("measuring a chain broken at slot 2: %v, want %v", err, testrun.ErrRunCount)
	}
}
