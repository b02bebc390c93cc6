package bench

import (
	"fmt"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"

	"github.com/cilium/ebpf"
)

// xdpPrograms are the core XDP programs (progs/xdp.c). drop is the program
// of the kernel selftest xdp_perf and the family's baseline.
var xdpPrograms = []string{"drop", "pass", "tx", "parse", "touch"}

// xdpSizes are the frame sizes: the Ethernet minimum and a full MTU frame.
var xdpSizes = []int{64, 1500}

// xdpFamily loads the core programs once and holds whichever is being
// measured in the XDP dispatcher, attached to lo in a private namespace.
type xdpFamily struct {
	objs   bpf.XDPObjects
	holder *rig.Holder
}

func newXDPFamily(tb testing.TB) *xdpFamily {
	tb.Helper()
	host.RequireRoot(tb)
	f := &xdpFamily{}
	probe.Require(tb, bpf.LoadXDPObjects(&f.objs, nil), "load XDP programs")
	tb.Cleanup(func() { f.objs.Close() })
	ns := host.NewNetns(tb)
	f.holder = rig.NewHolder(tb, ns, f.objs.Drop)
	return f
}

func (f *xdpFamily) prog(name string) *ebpf.Program {
	switch name {
	case "drop":
		return f.objs.Drop
	case "pass":
		return f.objs.Pass
	case "tx":
		return f.objs.Tx
	case "parse":
		return f.objs.Parse
	case "touch":
		return f.objs.Touch
	}
	panic("unknown XDP program " + name)
}

// loop returns the test_run loop of program name on a UDP frame of size
// bytes, held in the dispatcher while it runs.
func (f *xdpFamily) loop(tb testing.TB, name string, size int) *measure.Loop {
	tb.Helper()
	frame, err := bpf.UDPFrame(size)
	if err != nil {
		tb.Fatal(err)
	}
	p := f.prog(name)
	return &measure.Loop{Prog: p, Data: frame, Runs: f.objs.Runs, Switch: f.holder.Held(p)}
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
	for _, size := range xdpSizes {
		base := f.loop(b, "drop", size)
		for _, name := range xdpPrograms {
			b.Run(fmt.Sprintf("prog=%s/size=%d", name, size), func(b *testing.B) {
				v := f.loop(b, name, size)
				if name == "drop" {
					measure.Bench(b, v, nil, benchOptions())
					return
				}
				measure.Bench(b, v, base, benchOptions())
			})
		}
		// The A/A control: drop against drop, measured exactly as the
		// variants are. Its delta's interval must cover 0 in about 95%
		// of runs; when it does not, the intervals of this run are not
		// honest and the report draws no timing verdict from the file.
		b.Run(fmt.Sprintf("prog=aa/size=%d", size), func(b *testing.B) {
			measure.Bench(b, f.loop(b, "drop", size), base, benchOptions())
		})
	}
}
