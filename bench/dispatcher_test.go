package bench

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/testrun"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// dispatcherLevels are the occupancies measured: how many other programs
// share the dispatcher with the measured one. The dispatcher finds a
// program by binary search over its entries, so cost should grow with
// log2(k); at full (DispatcherMax others) the measured program gets no
// slot and is called through the fallback indirect call.
var dispatcherLevels = []int{1, 2, 4, 8, 16, 32, rig.DispatcherMax - 1, rig.DispatcherMax}

var fillModes = []struct {
	name string
	mode link.XDPAttachFlags
}{
	{"generic", link.XDPGenericMode},
	{"native", link.XDPDriverMode},
}

// BenchmarkDispatcher answers: what does the XDP dispatcher's direct call
// save over the retpoline'd indirect call it replaces (docs/claims.md §1), and
// what does a program pay as the dispatcher fills up and overflows?
//
// Every variant runs the xdp.c drop program (or, for prog=tc, the same work
// as a SCHED_CLS program) through a test_run repeat loop:
//
//   - dispatcher=k0: the program alone in the dispatcher (attached to lo in
//     a private namespace, so test_run need not rebuild the dispatcher). The
//     family's baseline: a direct call.
//   - dispatcher=k<N>/fill=<mode>: N other programs attached, in generic or
//     native mode, to veth devices in another private namespace, then the
//     measured program. The dispatcher holds N+1 programs.
//   - dispatcher=full/fill=<mode>: DispatcherMax others attached first, so
//     the measured program is the one past capacity: the kernel accepts
//     the attachment silently and calls the program through the
//     dispatcher's fallback, an indirect call.
//   - dispatcher=none/prog=tc: a program type test_run always calls through
//     prog->bpf_func, an indirect call: retpoline'd where retpolines are on,
//     CFI-checked on kCFI/FineIBT kernels.
//   - dispatcher=rebuild: the program is not attached, so each test_run
//     call adds it to the dispatcher and removes it again; call-us shows
//     that per-call cost. Its ns/op is the kernel's whole-ns average: the
//     rebuild varies too much for the suite's sub-ns clock to subtract.
//
// Every variant is measured in alternating rounds with the baseline; the
// fillers are attached and detached between rounds, outside the timed
// region. Other XDP programs on the host share the dispatcher and make
// every level fuller than named: the xdp-progs-at-start label counts them.
func BenchmarkDispatcher(b *testing.B) {
	f := newXDPFamily(b)
	layouts := f.layouts[bpf.XDPProgs.Drop]
	disps := loadLayouts(b, len(layouts), func() (*bpf.DispatcherObjects, error) {
		d := new(bpf.DispatcherObjects)
		return d, bpf.LoadDispatcherObjects(d, nil)
	}, func(d *bpf.DispatcherObjects) *ebpf.Program { return d.TcDrop })[0]
	drops := make([]*ebpf.Program, len(layouts))
	for i, objs := range layouts {
		drops[i] = objs.Drop
	}

	frame, err := bpf.UDPFrame(64)
	if err != nil {
		b.Fatal(err)
	}
	fillers := map[string]*rig.Filler{}
	for _, m := range fillModes {
		fl, err := rig.NewFiller(rig.DispatcherMax, m.mode)
		testutil.Must(b, record.Require, "fillers", fl, err)
		// The measured program, in every layout, first among any k
		// attached: its path through the dispatcher's binary search is
		// then the same on every run and kernel (dispatcher-rank says
		// where it was).
		if n, err := fl.Above(drops...); err != nil {
			b.Logf("order fillers: %v (dispatcher-rank says where the measured program sorts)", err)
		} else if n < rig.DispatcherMax {
			b.Logf("only %d of %d fillers lie above the measured program: dispatcher-rank says where it sorts", n, rig.DispatcherMax)
		}
		fillers[m.name] = fl
	}
	expedite := expediter(b)
	// occupy returns a Switch that sets the fillers of mode to k and
	// holds the measured program drop (attached last, so at full it is
	// the one left out).
	occupy := func(mode string, k int, drop *ebpf.Program, hold bool) func() error {
		return expedite(func() error {
			for name, fl := range fillers {
				want := 0
				if name == mode {
					want = k
				}
				if want < fl.Attached() {
					if err := fl.Set(want); err != nil {
						return err
					}
				}
			}
			if fl := fillers[mode]; fl != nil && k > fl.Attached() {
				if k >= rig.DispatcherMax {
					// The measured program must come last to be the one
					// left out. Release it only once others are attached:
					// the dispatcher never empties.
					if err := fl.Set(k - 1); err != nil {
						return err
					}
					if err := f.holder.Release(); err != nil {
						return err
					}
				}
				if err := fl.Set(k); err != nil {
					return err
				}
			}
			if !hold {
				return f.holder.Release()
			}
			return f.holder.Hold(drop)
		})
	}
	// xdpLoop is the loop of the drop program of every layout, with the
	// fillers of mode at k.
	xdpLoop := func(mode string, k int, hold bool) *testrun.Loop {
		return withLayouts(layouts, func(objs *bpf.XDPObjects) *testrun.Loop {
			return &testrun.Loop{Prog: objs.Drop, Data: frame, Runs: objs.Runs, Switch: occupy(mode, k, objs.Drop, hold)}
		})
	}
	var rows []measure.Row
	// row adds a row of v against a baseline of its own (the rows'
	// rounds interleave, and a loop keeps its layout), set up only when
	// -test.bench selects it.
	row := func(name string, v func() *testrun.Loop, base bool, report func(*testing.B, measure.Result) []measure.Figure) {
		rows = append(rows, measure.Row{Name: name, Report: report, Setup: func() (measure.Row, error) {
			r := measure.Row{Variant: v()}
			if base {
				r.Base = xdpLoop("", 0, true)
			}
			return r, nil
		}})
	}
	row("dispatcher=k0/fill=none/prog=xdp", func() *testrun.Loop { return xdpLoop("", 0, true) }, false, nil)
	// The A/A control: k0 against k0, each sample switching state as the
	// variants' do. Its delta's interval must cover 0 in about 95% of runs.
	row("dispatcher=aa/fill=none/prog=xdp", func() *testrun.Loop { return xdpLoop("", 0, true) }, true, nil)
	for _, m := range fillModes {
		for _, k := range dispatcherLevels {
			level := fmt.Sprintf("k%d", k)
			if k == rig.DispatcherMax {
				level = "full"
			}
			// Where the measured program sorts among the fillers decides
			// its path through the dispatcher's binary search (the same
			// in every sample: the fillers are attached in one order):
			// the highest rank of any layout's, read once at the level.
			rank, rankErr := 0, error(nil)
			v := func() *testrun.Loop {
				v := xdpLoop(m.name, k, true)
				if err := v.Switch(); err != nil {
					b.Fatal(err)
				}
				for _, d := range drops {
					r, err := fillers[m.name].Rank(d)
					rank, rankErr = max(rank, r), cmp.Or(rankErr, err)
				}
				failpoint(b, "dispatcher-"+level)
				return v
			}
			row(fmt.Sprintf("dispatcher=%s/fill=%s/prog=xdp", level, m.name), v, true, func(b *testing.B, _ measure.Result) []measure.Figure {
				if k >= rig.DispatcherMax {
					return nil
				}
				if rankErr != nil {
					b.Logf("dispatcher-rank: %v", rankErr)
					return nil
				}
				return []measure.Figure{{Unit: "dispatcher-rank", Value: float64(rank)}}
			})
		}
	}
	row("dispatcher=none/fill=none/prog=tc", func() *testrun.Loop {
		return withLayouts(disps, func(disp *bpf.DispatcherObjects) *testrun.Loop {
			return &testrun.Loop{Prog: disp.TcDrop, Data: frame, Runs: disp.Runs, Switch: occupy("", 0, f.objs.Drop, true)}
		})
	}, true, nil)
	row("dispatcher=rebuild/fill=none/prog=xdp", func() *testrun.Loop {
		rebuild := xdpLoop("", 0, false)
		for _, l := range loopLayouts(rebuild) {
			l.KernelClock = true
		}
		return rebuild
	}, true, nil)
	measure.Family(b, benchOptions(), rows)
}

// rcuExpedited makes every RCU grace period an expedited one while it is 1.
const rcuExpedited = "/sys/kernel/rcu_expedited"

// expediter returns what wraps a dispatcher switch so that it runs with
// expedited grace periods, restored to the host's setting after it:
// every filler the switch attaches or detaches waits for one, which on
// some hosts takes 8 ms (docs/method.md#the-dispatchers-switch). The
// switch is outside every timed call, so the rebuild row's calls still
// wait for the host's kind. Where the kernel has no such setting, or it
// cannot be changed, switches run as they are, and the log says so.
func expediter(tb testing.TB) func(sw func() error) func() error {
	tb.Helper()
	undo, err := journal.ChangeSysctl(rcuExpedited, "1")
	if undo != nil {
		err = errors.Join(err, undo())
	}
	if err != nil {
		tb.Logf("the dispatcher's switches wait for the host's grace periods: %v", err)
		return func(sw func() error) func() error { return sw }
	}
	return func(sw func() error) func() error {
		return func() (err error) {
			undo, err := journal.ChangeSysctl(rcuExpedited, "1")
			if undo != nil {
				defer func() { err = errors.Join(err, undo()) }()
			}
			if err != nil {
				return err
			}
			return sw()
		}
	}
}

// TestExpediter: a switch runs with expedited grace periods, and the
// host's setting is back after it, also when the switch fails.
func TestExpediter(t *testing.T) {
	host.RequireRoot(t)
	read := func() string {
		t.Helper()
		v, err := os.ReadFile(rcuExpedited)
		if err != nil {
			t.Skipf("no %s here: %v", rcuExpedited, err)
		}
		return strings.TrimSpace(string(v))
	}
	// From 0, so that the switch's 1 is the expediter's doing.
	undo, err := journal.ChangeSysctl(rcuExpedited, "0")
	if undo != nil {
		t.Cleanup(func() {
			if err := undo(); err != nil {
				t.Error(err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	before := read()
	expedite := expediter(t)
	failed := errors.New("switch failed")
	for _, want := range []error{nil, failed} {
		var during string
		err := expedite(func() error {
			during = read()
			return want
		})()
		if !errors.Is(err, want) {
			t.Errorf("switch returning %v: got %v", want, err)
		}
		if during != "1" {
			t.Errorf("%s during the switch: %s, want 1", rcuExpedited, during)
		}
		if got := read(); got != before {
			t.Errorf("%s after the switch: %s, want %s as before", rcuExpedited, got, before)
		}
	}
}
