package bench

import (
	"fmt"
	"math"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

// xdpPrograms are the core XDP programs (progs/xdp.c). drop is the program
// of the kernel selftest xdp_perf and the family's baseline; add64 is drop
// plus 64 register additions, the calibration of instruction counts.
var xdpPrograms = []*bpf.XDPProgram{bpf.XDPProgs.Drop, bpf.XDPProgs.Pass, bpf.XDPProgs.Tx, bpf.XDPProgs.Parse, bpf.XDPProgs.Touch, bpf.XDPProgs.Add64}

// xdpSizes are the frame sizes: the Ethernet minimum and a full MTU frame.
var xdpSizes = []int{64, 1500}

// xdpFamily loads the core programs layoutPool times -bpfbench.layouts
// times, keeps for each program the -bpfbench.layouts loads that spread it
// over the cache line (spreadLayouts), and holds whichever is being
// measured in the XDP dispatcher, attached to lo in a private namespace.
type xdpFamily struct {
	// objs is one of the loads kept, for what needs a load, not a layout.
	objs    *bpf.XDPObjects
	layouts map[*bpf.XDPProgram][]*bpf.XDPObjects
	holder  *rig.Holder
}

func newXDPFamily(tb testing.TB) *xdpFamily {
	tb.Helper()
	host.RequireRoot(tb)
	var progs []func(*bpf.XDPObjects) *ebpf.Program
	for _, p := range xdpPrograms {
		progs = append(progs, p.Of)
	}
	loads := loadLayouts(tb, layouts(), func() (*bpf.XDPObjects, error) {
		o := new(bpf.XDPObjects)
		return o, bpf.LoadXDPObjects(o, nil)
	}, progs...)
	f := &xdpFamily{layouts: map[*bpf.XDPProgram][]*bpf.XDPObjects{}}
	for i, p := range xdpPrograms {
		f.layouts[p] = loads[i]
	}
	f.objs = f.layouts[bpf.XDPProgs.Drop][0]
	h, err := rig.NewHolder(host.NewNetns(tb), f.objs.Drop)
	f.holder = testutil.Must(tb, record.Require, "dispatcher holder", h, err)
	return f
}

// loop returns the test_run loop of prog on a UDP frame of size bytes,
// held in the dispatcher while it runs, in every layout of prog.
func (f *xdpFamily) loop(tb testing.TB, prog *bpf.XDPProgram, size int) *testrun.Loop {
	tb.Helper()
	frame, err := bpf.UDPFrame(size)
	if err != nil {
		tb.Fatal(err)
	}
	return withLayouts(f.layouts[prog], func(objs *bpf.XDPObjects) *testrun.Loop {
		p := prog.Of(objs)
		return &testrun.Loop{Prog: p, Data: frame, Runs: objs.Runs, Switch: f.holder.Held(p)}
	})
}

// loopLayouts is l and its other layouts, the loops the rounds take in
// turn.
func loopLayouts(l *testrun.Loop) []*testrun.Loop {
	return append([]*testrun.Loop{l}, l.Layouts...)
}

// withLayouts is the loop of the first of loads, with the loops of the
// others as its Layouts.
func withLayouts[T any](loads []T, loop func(T) *testrun.Loop) *testrun.Loop {
	l := loop(loads[0])
	for _, o := range loads[1:] {
		l.Layouts = append(l.Layouts, loop(o))
	}
	return l
}

// calibrate checks the instruction-count mode against the JIT: in a guest
// whose clocks count instructions, add64 minus drop must be the number of
// machine instructions add64's JIT'ed image has more than drop's, within
// half an instruction. Anywhere else the delta is a time (about 64 cycles
// of dependent additions) and nothing is checked.
func (f *xdpFamily) calibrate(r measure.Result) error {
	c := clocks()
	if !c.Icount {
		return nil
	}
	add, err := bpf.JitedInstructions(f.objs.Add64)
	if err != nil {
		return fmt.Errorf("count add64's JIT'ed instructions: %w", err)
	}
	drop, err := bpf.JitedInstructions(f.objs.Drop)
	if err != nil {
		return fmt.Errorf("count drop's JIT'ed instructions: %w", err)
	}
	want := float64(add - drop)
	got := r.Delta.Value / math.Exp2(float64(c.Shift))
	if !r.HaveDelta || math.Abs(got-want) > 0.5 {
		return fmt.Errorf("calibration: add64 - drop counted %.2f instructions, the JIT images differ by %.0f: the clocks do not count instructions", got, want)
	}
	return nil
}

// BenchmarkXDP answers: what does one run of an XDP program cost, timed by
// the kernel's BPF_PROG_TEST_RUN repeat loop as in the selftest xdp_perf,
// for programs that only return (drop, pass, tx), read headers (parse) or
// rewrite them (touch), on 64- and 1500-byte frames? The program is called
// through the XDP dispatcher's direct call, as it is when attached to a
// netdev. delta-ns/op is each variant minus drop at the same size, measured
// in alternating rounds.
func BenchmarkXDP(b *testing.B) {
	f := newXDPFamily(b)
	failpoint(b, "xdp-setup")
	var rows []measure.Row
	for _, size := range xdpSizes {
		// Each row has its own baseline loop: a loop keeps its layout and
		// its recent short calls, and the rows' rounds interleave.
		for _, prog := range xdpPrograms {
			row := measure.Row{Name: fmt.Sprintf("prog=%s/size=%d", prog, size), Variant: f.loop(b, prog, size)}
			if prog != bpf.XDPProgs.Drop {
				row.Base = f.loop(b, bpf.XDPProgs.Drop, size)
			}
			if prog == bpf.XDPProgs.Add64 {
				row.Check = f.calibrate
			}
			rows = append(rows, row)
		}
		// The A/A control: drop against drop, measured exactly as the
		// variants are. Its delta's interval must cover 0 in about 95%
		// of runs; when it does not, the intervals of this run are not
		// honest and the report draws no timing verdict from the file.
		rows = append(rows, measure.Row{Name: fmt.Sprintf("prog=aa/size=%d", size), Variant: f.loop(b, bpf.XDPProgs.Drop, size), Base: f.loop(b, bpf.XDPProgs.Drop, size)})
	}
	measure.Family(b, benchOptions(), rows)
}
