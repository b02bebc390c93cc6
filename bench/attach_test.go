package bench

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/iface"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"golang.org/x/perf/benchfmt"
)

var (
	flagAttachSweep   = flag.Bool("bpfbench.attach-sweep", false, "BenchmarkAttach: every action × mode × program, and dispatcher=k47 (slow)")
	flagIface         = flag.String("bpfbench.iface", "", "BenchmarkAttach: measure receivers on this real device, with traffic from an external generator, instead of the veth rig")
	flagIfaceOverride = flag.Bool("bpfbench.iface-override", false, "let -bpfbench.iface name a device that carries the default route or the management address")
	flagIfaceNetns    = flag.String("bpfbench.iface-netns", "", "network namespace of the -bpfbench.iface device: a name under /run/netns or a path (default: the suite's own)")
	flagDuration      = flag.Duration("bpfbench.duration", 5*time.Second, "-bpfbench.iface: how long to sample each variant")
)

// validateAttachFlags checks the attach family's flags, and for
// -bpfbench.iface refuses a device whose loss would cut the machine off,
// before anything changes.
func validateAttachFlags() error {
	if *flagDuration < 100*time.Millisecond || *flagDuration > time.Hour {
		return fmt.Errorf("-bpfbench.duration=%v: want 100ms to 1h", *flagDuration)
	}
	if *flagIface == "" {
		if *flagIfaceOverride || *flagIfaceNetns != "" {
			return errors.New("-bpfbench.iface-override and -bpfbench.iface-netns need -bpfbench.iface")
		}
		return nil
	}
	_, err := iface.Check(ifaceTarget(), *flagIfaceOverride)
	return err
}

// attachVariant is one row of the family's table.
type attachVariant struct {
	// action, mode and prog are the rig's receiver; all empty for the
	// generator alone (named none).
	action rig.Action
	mode   bpf.XDPMode
	prog   rig.RxProg
	// dispatcher is direct (no fillers), full (the receiver attached with
	// the dispatcher full, so it is called through the fallback) or k47
	// (one filler fewer: the receiver is the 48th program, called directly
	// from a full dispatcher).
	dispatcher string
}

func (v attachVariant) name() string {
	return fmt.Sprintf("action=%s/mode=%s/prog=%s/dispatcher=%s", orNone(v.action), orNone(v.mode), orNone(v.prog), v.dispatcher)
}

// orNone names an unset part of a name none.
func orNone[S ~string](s S) string {
	if s == "" {
		return "none"
	}
	return string(s)
}

// reference is the variant v is paired with for delta-ns/pkt, measured in
// the same rounds, so that the difference between two receivers is not
// the machine changing speed between their runs (it does here, by up to
// 1.7x when the other CPU is busy). Each row differs from its reference in
// one thing:
//   - dispatcher=full: the same receiver as the 48th program (k47), called
//     directly from an equally full dispatcher, so the delta is the
//     fallback's price alone (and switching moves one filler, not 46);
//   - prog=parse|touch: prog=drop;
//   - action=redirect: action=tx (docs/claims.md §3);
//   - action=pass|tx: action=drop;
//   - mode=generic, action=drop: mode=native.
//
// The generator alone, native XDP_DROP and dispatcher=k47 have none.
func (v attachVariant) reference() (attachVariant, bool) {
	ref := v
	switch {
	case v.action == "", v.dispatcher == "k47":
		return v, false
	case v.dispatcher == "full":
		ref.dispatcher = "k47"
	case v.prog != rig.RxDrop:
		ref.prog = rig.RxDrop
	case v.action == rig.Redirect:
		ref.action = rig.Tx
	case v.action != rig.Drop:
		ref.action = rig.Drop
	case v.mode == bpf.XDPGeneric:
		ref.mode = bpf.XDPNative
	default:
		return v, false
	}
	return ref, true
}

// receiver is what v attaches.
func (v attachVariant) receiver(t *rig.Traffic) rig.Receiver {
	if v.action == "" {
		return rig.Receiver{}
	}
	r := rig.Receiver{Action: v.action, Mode: v.mode, Prog: v.prog}
	switch v.dispatcher {
	case "full":
		r.Fill = t.FullFill(r)
	case "k47":
		r.Fill = t.FullFill(r) - 1
	}
	return r
}

// attachVariants is the table: the generator alone first (the baseline of
// every rx-ns/pkt), then receivers. The default set answers the issue's
// questions in under 40 s; sweep adds every combination.
func attachVariants(sweep bool) []attachVariant {
	vs := []attachVariant{{dispatcher: "direct"}}
	if !sweep {
		return append(vs,
			attachVariant{rig.Drop, bpf.XDPNative, rig.RxDrop, "direct"},
			attachVariant{rig.Pass, bpf.XDPNative, rig.RxDrop, "direct"},
			attachVariant{rig.Tx, bpf.XDPNative, rig.RxDrop, "direct"},
			attachVariant{rig.Redirect, bpf.XDPNative, rig.RxDrop, "direct"},
			attachVariant{rig.Drop, bpf.XDPGeneric, rig.RxDrop, "direct"},
			attachVariant{rig.Pass, bpf.XDPGeneric, rig.RxDrop, "direct"},
			attachVariant{rig.Tx, bpf.XDPGeneric, rig.RxDrop, "direct"},
			attachVariant{rig.Drop, bpf.XDPNative, rig.RxParse, "direct"},
			attachVariant{rig.Drop, bpf.XDPNative, rig.RxTouch, "direct"},
			attachVariant{rig.Drop, bpf.XDPNative, rig.RxDrop, "full"},
			attachVariant{rig.Drop, bpf.XDPGeneric, rig.RxDrop, "full"},
		)
	}
	for _, mode := range bpf.XDPModes {
		for _, action := range rig.Actions {
			for _, prog := range rig.RxProgs {
				vs = append(vs, attachVariant{action, mode, prog, "direct"})
			}
		}
		vs = append(vs, attachVariant{rig.Drop, mode, rig.RxDrop, "k47"}, attachVariant{rig.Drop, mode, rig.RxDrop, "full"})
	}
	return vs
}

// BenchmarkAttach answers: what does an XDP program cost per packet when
// real frames reach it on a device, per verdict (drop, pass, tx, redirect),
// attach mode (native: the driver's NAPI poll; generic: the stack's receive
// path, on an skb), program (drop, parse, touch) and dispatcher state (the
// receiver called directly, or through the fallback of a full dispatcher:
// docs/claims.md §1's 22.0 -> 29.4 Mpps, in ns per packet)?
//
// The rig (rig.Traffic): a veth pair with 2 queues in a private namespace;
// an in-kernel generator (BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES)
// redirects 64-byte UDP frames through a DEVMAP out of one end, and the
// receiver under test runs on the other. Frames are counted in BPF on both
// sides, per CPU and per RX queue.
//
// veth runs the receiver's NAPI on the CPU that sent, so ONE CPU DOES BOTH
// HALVES: ns/pkt (CPU time per received packet) and pps (1e9/ns/pkt) are
// generating plus receiving. gen-ns/pkt is the generator alone (frames made
// and dropped by the generator), and rx-ns/pkt the paired per-round
// difference: the receiving side's cost, veth hand-off included.
// delta-ns/pkt is the paired difference against the row's reference, a
// variant that differs in one thing (see reference): compare receivers by
// it, not by subtracting two rows' numbers. rx-bound is 1 when the receiving side is the larger half and
// under 1% of frames were lost, 0 when the number is dominated by the
// generator or by losses. lost-pkts counts frames generated but not
// delivered (to the receiver, or for tx/redirect back to the sending end).
//
// With -bpfbench.iface=NAME it measures a real device with external
// traffic instead (see benchAttachIface).
func BenchmarkAttach(b *testing.B) {
	host.RequireRoot(b)
	if *flagIface != "" {
		benchAttachIface(b)
		return
	}
	t, err := rig.NewTraffic(2)
	testutil.Must(b, record.Require, "traffic rig", t, err)
	o := benchOptions()
	var rows []measure.Row
	for _, v := range attachVariants(*flagAttachSweep) {
		r := v.receiver(t)
		var ref *rig.Receiver
		refv, hasRef := v.reference()
		if hasRef {
			rr := refv.receiver(t)
			ref = &rr
		}
		rows = append(rows, measure.Row{
			Name: v.name(),
			Start: func(b *testing.B) measure.Job {
				if err := t.Set(r); err != nil {
					b.Fatal(err)
				}
				failpoint(b, "attach-"+v.dispatcher) // with everything attached
				w, summary := t.Job(r, ref, o.Interleave, nil)
				w.Report = func(b *testing.B, m measure.Result) []measure.Figure {
					res := summary(m)
					msg := harness.TrafficWords(r, res)
					if res.HaveDelta {
						msg += fmt.Sprintf("; delta-ns/pkt %.2f%s against %s", res.Delta, harness.PlusMinus(res.DeltaCI95), refv.name())
					}
					if !r.GeneratorOnly() {
						msg += "\n  frames the receiver saw, per RX queue and CPU:\n" + harness.Indent(res.Total.RX.Table(), "  ")
					}
					harness.Say(b, record, "", msg)
					return res.Figures(r)
				}
				return w
			},
		})
	}
	measure.Family(b, o, rows)
}

// TestAttachOutputParses runs the family's baseline, a receiver and a
// full-dispatcher variant as a user would, reads the output as benchstat
// does, and checks the run left nothing behind.
func TestAttachOutputParses(t *testing.T) {
	host.RequireRoot(t)
	requireLiveFrames(t)
	before := takeSnapshot(t)
	run := runFamily(t, "^BenchmarkAttach$/^action=(none|drop)$/^mode=(none|native)$/^prog=(none|drop)$/^dispatcher=(direct|full)$")
	var results []*benchfmt.Result
	for _, n := range run.order {
		results = append(results, run.results[n])
	}
	units, stdout, stderr := run.units, run.stdout, run.stderr
	want := []string{
		"Attach/action=none/mode=none/prog=none/dispatcher=direct",
		"Attach/action=drop/mode=native/prog=drop/dispatcher=direct",
		"Attach/action=drop/mode=native/prog=drop/dispatcher=full",
	}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d:\n%s", len(results), len(want), stdout)
	}
	for i, w := range want {
		if got := string(results[i].Name.Full()); !strings.HasPrefix(got, w+"-") {
			t.Errorf("result %d is %q, want %s-<procs>", i, got, w)
		}
		run.requireUnits(t, w, "capacity-pps", "sec/pkt", "gen-sec/pkt", "lost-pkts", "lost-frac", "remeasured")
		if _, ok := results[i].Value("sec/op"); ok {
			t.Errorf("%s reports sec/op: one op is not one packet", w)
		}
		if v, _ := results[i].Value("capacity-pps"); v <= 0 {
			t.Errorf("%s: %v pps", w, v)
		}
	}
	if _, ok := results[0].Value("rx-sec/pkt"); ok {
		t.Error("the generator-only baseline reports a receiver cost")
	}
	for _, unit := range []string{"rx-sec/pkt", "rx-bound"} {
		if _, ok := results[1].Value(unit); !ok {
			t.Errorf("the drop receiver lacks %s", unit)
		}
	}
	if _, ok := results[1].Value("delta-sec/pkt"); ok {
		t.Error("dispatcher=direct reports a delta against itself")
	}
	if _, ok := results[2].Value("delta-sec/pkt"); !ok {
		t.Error("dispatcher=full lacks its paired delta-ns/pkt")
	}
	// lost-pkts is a diagnostic: its Unit line is in the diagnostics file.
	for unit, better := range map[string]string{"capacity-pps": "higher", "sec/pkt": "lower", "rx-sec/pkt": "lower", "rx-bound": "higher"} {
		if u := units[benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}]; u == nil || u.Value != better {
			t.Errorf("no Unit line says %s is better %s", unit, better)
		}
	}
	if !strings.Contains(stderr, "One CPU does both halves") || !strings.Contains(stderr, "per RX queue and CPU") {
		t.Errorf("stderr does not say that one CPU does both halves, or lacks the queue table:\n%s", stderr)
	}
	requireNoConfigLines(t, stderr)
	requireSameState(t, before)
}
