package bench

import (
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

// helperCalls are the helpers the family prices, each a program of
// progs/helper.c that adds what it returns to a global; none adds a
// constant, the baseline.
var helperCalls = []struct {
	name string
	prog func(*bpf.HelperObjects) *ebpf.Program
}{
	{"ktime_get_ns", func(o *bpf.HelperObjects) *ebpf.Program { return o.KtimeGetNs }},
	{"get_smp_processor_id", func(o *bpf.HelperObjects) *ebpf.Program { return o.GetSmpProcessorId }},
}

// BenchmarkHelper answers: what does one helper call cost an XDP
// program? helper=<name> is an XDP program that adds the helper's
// result to a global, against helper=none, which adds a constant: its
// delta-ns/op is the call. bpf_ktime_get_ns is the clock read that
// run-time stats make twice a run (docs/claims.md 7.2);
// bpf_get_smp_processor_id is one the x86-64 JIT may inline, so a kernel
// that does shows no call at all. Each program runs in a test_run loop
// held in the dispatcher, in every layout, as BenchmarkXDP's do.
func BenchmarkHelper(b *testing.B) {
	host.RequireRoot(b)
	var loads []*bpf.HelperObjects
	for range layouts() {
		objs := new(bpf.HelperObjects)
		record.Require(b, bpf.LoadHelperObjects(objs, nil), "load the helper programs")
		b.Cleanup(func() { objs.Close() })
		loads = append(loads, objs)
	}
	h, err := rig.NewHolder(host.NewNetns(b), loads[0].None)
	holder := testutil.Must(b, record.Require, "dispatcher holder", h, err)
	frame, err := bpf.UDPFrame(64)
	if err != nil {
		b.Fatal(err)
	}
	loop := func(prog func(*bpf.HelperObjects) *ebpf.Program) *testrun.Loop {
		return withLayouts(loads, func(o *bpf.HelperObjects) *testrun.Loop {
			return &testrun.Loop{Prog: prog(o), Data: frame, Runs: o.Runs, Switch: holder.Held(prog(o))}
		})
	}
	none := func(o *bpf.HelperObjects) *ebpf.Program { return o.None }
	rows := []measure.Row{{Name: "helper=none", Setup: func() (measure.Row, error) {
		return measure.Row{Variant: loop(none)}, nil
	}}}
	for _, c := range helperCalls {
		rows = append(rows, measure.Row{Name: "helper=" + c.name, Setup: func() (measure.Row, error) {
			return measure.Row{Variant: loop(c.prog), Base: loop(none)}, nil
		}})
	}
	measure.Family(b, benchOptions(), rows)
}
