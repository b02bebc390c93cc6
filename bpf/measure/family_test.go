package measure_test

import (
	"errors"
	"flag"
	"fmt"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

// TestFamilyInterleavesRows measures two rows, each a loop of its own load
// of drop against a baseline, as one family: the rows' measurements must
// come in visits between each other's, not in one stretch each, every
// loop's program must have run, each row's Report must run with its
// figures, and each row's Check once, a Check's error failing its row
// alone.
func TestFamilyInterleavesRows(t *testing.T) {
	f := flag.Lookup("test.benchtime")
	old := f.Value.String()
	if err := f.Value.Set("2000000x"); err != nil {
		t.Fatal(err)
	}
	defer f.Value.Set(old)

	loads := []*bpf.XDPObjects{testutil.LoadXDP(t), testutil.LoadXDP(t), testutil.LoadXDP(t), testutil.LoadXDP(t)}
	h, err := rig.NewHolder(host.NewNetns(t), loads[0].Drop)
	testutil.Must(t, probe.Require, "dispatcher holder", h, err)
	frame := testutil.Frame(t, 64)
	var seq []int // the row of every measurement, warm-ups included
	loop := func(row int, objs *bpf.XDPObjects) *testrun.Loop {
		hold := h.Held(objs.Drop)
		return &testrun.Loop{Prog: objs.Drop, Data: frame, Runs: objs.Runs, Prepare: func() error {
			seq = append(seq, row)
			return hold()
		}}
	}
	reported, checked := make([]int, 2), make([]int, 2)
	subs := make([]*testing.B, 2) // each row's sub-benchmark
	var rows []measure.Row
	for i := range reported {
		rows = append(rows, measure.Row{
			Name: fmt.Sprintf("row=%d", i), Variant: loop(i, loads[2*i]), Base: loop(i, loads[2*i+1]),
			Report: func(b *testing.B, r measure.Result) []measure.Figure {
				reported[i]++
				subs[i] = b
				if !r.HaveDelta || r.Calls == 0 || !(r.Ns > 0) {
					b.Errorf("row %d: %d rounds, ns/op %v, delta %v", i, r.Calls, r.Ns, r.HaveDelta)
				}
				return nil
			},
			Check: func(r measure.Result) error {
				checked[i]++
				if i == 1 {
					return errors.New("row 1 is wrong on purpose")
				}
				return nil
			},
		})
	}
	var runs [4]uint64
	for i, objs := range loads {
		objs.Runs.Get(&runs[i])
	}
	testing.Benchmark(func(b *testing.B) {
		measure.Family(b, measure.BenchOptions{CPU: testutil.LastCPU(), Interleave: true}, rows)
	})
	for i, objs := range loads {
		var now uint64
		objs.Runs.Get(&now)
		if now == runs[i] {
			t.Errorf("load %d never ran", i)
		}
	}
	for i, n := range reported {
		if n == 0 {
			t.Errorf("row %d was never reported", i)
		}
		if checked[i] != 1 {
			t.Errorf("row %d was checked %d times, want once", i, checked[i])
		}
	}
	if subs[0] == nil || subs[1] == nil || subs[0].Failed() || !subs[1].Failed() {
		t.Errorf("a Check's error did not fail its row alone (row 0 failed: %v, row 1 failed: %v)", subs[0] != nil && subs[0].Failed(), subs[1] != nil && subs[1].Failed())
	}
	stretches := 0
	for j := range seq {
		if j == 0 || seq[j] != seq[j-1] {
			stretches++
		}
	}
	t.Logf("%d measurements in %d stretches", len(seq), stretches)
	if stretches < 4 {
		t.Errorf("the rows' %d measurements came in %d stretches: the rows were not interleaved", len(seq), stretches)
	}
}

// TestFamilySetsUpSelectedRows: the engine sets up a row (Row.Setup) only
// when -test.bench selects it, and a setup's error is the row's.
func TestFamilySetsUpSelectedRows(t *testing.T) {
	f := flag.Lookup("test.bench")
	old := f.Value.String()
	if err := f.Value.Set(".*/^row=1$"); err != nil {
		t.Fatal(err)
	}
	defer f.Value.Set(old)
	var setUp []int
	var rows []measure.Row
	for i := range 3 {
		rows = append(rows, measure.Row{Name: fmt.Sprintf("row=%d", i), Setup: func() (measure.Row, error) {
			setUp = append(setUp, i)
			return measure.Row{}, fmt.Errorf("row %d: %w", i, ebpf.ErrNotSupported)
		}})
	}
	var sub *testing.B
	rows[1].Report = func(b *testing.B, _ measure.Result) []measure.Figure { sub = b; return nil }
	testing.Benchmark(func(b *testing.B) {
		measure.Family(b, measure.BenchOptions{CPU: testutil.LastCPU(), Interleave: true}, rows)
	})
	if len(setUp) != 1 || setUp[0] != 1 {
		t.Errorf("rows set up: %v, want only row 1, the one selected", setUp)
	}
	if sub != nil {
		t.Errorf("row 1 was reported: its setup's error should have skipped it")
	}
}
