package bench

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/iface"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"

	"github.com/vishvananda/netlink"
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

func ifaceTarget() iface.Target {
	return iface.Target{Name: *flagIface, Netns: *flagIfaceNetns}
}

// attachVariant is one row of the family's table.
type attachVariant struct {
	// action, mode and prog are the rig's receiver; all empty for the
	// generator alone (named none).
	action rig.Action
	mode   bpf.XDPMode
	prog   rig.Work
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
//   - action=redirect: action=tx (docs/claims.md §3: redirect costs ~6.7 ns more);
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
	case v.prog != rig.WorkDrop:
		ref.prog = rig.WorkDrop
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
	r := rig.Receiver{Action: v.action, Mode: v.mode, Work: v.prog}
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
			attachVariant{rig.Drop, bpf.XDPNative, rig.WorkDrop, "direct"},
			attachVariant{rig.Pass, bpf.XDPNative, rig.WorkDrop, "direct"},
			attachVariant{rig.Tx, bpf.XDPNative, rig.WorkDrop, "direct"},
			attachVariant{rig.Redirect, bpf.XDPNative, rig.WorkDrop, "direct"},
			attachVariant{rig.Drop, bpf.XDPGeneric, rig.WorkDrop, "direct"},
			attachVariant{rig.Pass, bpf.XDPGeneric, rig.WorkDrop, "direct"},
			attachVariant{rig.Tx, bpf.XDPGeneric, rig.WorkDrop, "direct"},
			attachVariant{rig.Drop, bpf.XDPNative, rig.WorkParse, "direct"},
			attachVariant{rig.Drop, bpf.XDPNative, rig.WorkTouch, "direct"},
			attachVariant{rig.Drop, bpf.XDPNative, rig.WorkDrop, "full"},
			attachVariant{rig.Drop, bpf.XDPGeneric, rig.WorkDrop, "full"},
		)
	}
	for _, mode := range bpf.XDPModes {
		for _, action := range rig.Actions {
			for _, prog := range rig.Works {
				vs = append(vs, attachVariant{action, mode, prog, "direct"})
			}
		}
		vs = append(vs, attachVariant{rig.Drop, mode, rig.WorkDrop, "k47"}, attachVariant{rig.Drop, mode, rig.WorkDrop, "full"})
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
	t := rig.NewTraffic(b, 2)
	o := benchOptions()
	for _, v := range attachVariants(*flagAttachSweep) {
		var last *rig.TrafficResult
		r := v.receiver(t)
		var ref *rig.Receiver
		refv, hasRef := v.reference()
		if hasRef {
			rr := refv.receiver(t)
			ref = &rr
		}
		probe.Run(b, v.name(), func(b *testing.B) {
			if err := t.Set(r); err != nil {
				b.Fatal(err)
			}
			failpoint(b, "attach-"+v.dispatcher) // with everything attached
			res := t.Bench(b, r, ref, o, nil)
			harness.ReportTraffic(b, clocks(), r, res)
			last = &res
		})
		if last != nil {
			msg := harness.TrafficVerdict(r, *last)
			if last.HaveDelta {
				msg += fmt.Sprintf("; delta-ns/pkt %.2f%s against %s", last.Delta, harness.PlusMinus(last.DeltaCI95), refv.name())
			}
			if !r.GeneratorOnly() {
				msg += "\n  frames the receiver saw, per RX queue and CPU:\n" + harness.Indent(last.Total.RX.Table(), "  ")
			}
			harness.Say(b, v.name(), msg)
		}
	}
}

// ifaceVariants are the real-NIC mode's receivers: every verdict that
// leaves the external generator's traffic alone (no tx, no redirect).
func ifaceVariants(sweep bool) []attachVariant {
	progs := []rig.Work{rig.WorkDrop}
	if sweep {
		progs = rig.Works
	}
	var vs []attachVariant
	for _, action := range []rig.Action{rig.Drop, rig.Pass} {
		for _, prog := range progs {
			vs = append(vs, attachVariant{action: action, prog: prog})
		}
	}
	return vs
}

// benchAttachIface is the family on a real device, xdp_rxq_info style: the
// receiver attached natively (generically if the driver has no XDP), and
// per variant the rounds engine's calls are one-second windows of its
// per-CPU, per-queue counters for -bpfbench.duration (a per-queue table on
// stderr each), with steal and the core's load read beside each, as for
// every family. A benchmark line per variant: pps (all queues, all
// windows), ns/pkt (softirq CPU time per packet on the receiving CPUs,
// tick-sampled: the low quantile of the uncontended windows'),
// rx-cpu-busy (the busiest receiving CPU's softirq share), lost-pkts (what
// the NIC dropped before XDP: rx missed, fifo and overrun errors),
// contended-frac, and rx-bound (1 when the receiving CPU was saturated or
// the NIC dropped frames: pps is then the receiver's capacity; 0 when the
// generator or the link set the rate).
//
// The device was checked before anything changed (validateAttachFlags) and
// is checked again here; one bpf_link is attached for all variants
// (switching programs by link update, so the NIC reconfigures its rings
// once), detached at the end, and the device's XDP state is compared with
// what it was. The link also detaches if the process dies.
func benchAttachIface(b *testing.B) {
	ifc, err := iface.Check(ifaceTarget(), *flagIfaceOverride)
	if err != nil {
		b.Fatal(err)
	}
	rs := rig.LoadReceivers(b)
	vs := ifaceVariants(*flagAttachSweep)
	l, mode, nativeErr := iface.Attach(b, ifc, rs.Prog(vs[0].action, vs[0].prog))
	if nativeErr != nil {
		fmt.Fprintf(os.Stderr, "Attach on %s: native XDP failed (%v): measuring generic XDP\n", ifc, nativeErr)
	}
	dev := iface.SanitizeName(ifc.Name)
	o := benchOptions()
	o.Duration = *flagDuration
	for _, v := range vs {
		name := fmt.Sprintf("dev=%s/action=%s/mode=%s/prog=%s", dev, v.action, mode, v.prog)
		var last *iface.Sample
		probe.Run(b, name, func(b *testing.B) {
			if err := l.Update(rs.Prog(v.action, v.prog)); err != nil {
				b.Fatalf("switch %s to %s/%s: %v", ifc, v.action, v.prog, err)
			}
			fmt.Fprintf(os.Stderr, "Attach on %s: %s XDP, program %s returning %s, for %v\n", ifc, mode, v.prog, v.action, *flagDuration)
			m, err := iface.NewMeter(ifc, rs.RxCount(), os.Stderr)
			if err != nil {
				b.Fatal(err)
			}
			// A call is a window of the device's counters; its figure the
			// window's softirq ns per packet (none: +Inf, never the
			// least).
			var total iface.Sample
			window := func(ms uint32) (float64, error) {
				s, err := m.Window(time.Duration(ms) * time.Millisecond)
				total = total.Add(s)
				if s.Packets() == 0 {
					return math.Inf(1), err
				}
				return s.NsPerPkt(), err
			}
			rounds, contended, err := measure.Streams(b, o, ifaceWindows, func() { total = iface.Sample{} }, window)
			if err != nil {
				b.Fatal(err)
			}
			reportIface(b, total, rounds.Location(0).Value, contended)
			last = &total
		})
		if last != nil {
			harness.Say(b, name, ifaceVerdict(*last))
		}
	}
}

// ifaceWindows are the real-NIC mode's calls, in ms: one second each,
// after a warm-up of a tenth.
var ifaceWindows = measure.CallSizes{Warm: 100, Min: 1000, Max: 1000}

// ifaceRxBound says whether a real-NIC sample measures the receiver: its
// busiest CPU was saturated, or the NIC dropped frames it had no time for.
func ifaceRxBound(s iface.Sample) (bound bool, lostFrac float64) {
	p := s.Packets()
	if p+s.Missed > 0 {
		lostFrac = float64(s.Missed) / float64(p+s.Missed)
	}
	return p > 0 && (s.Busy() >= 0.9 || lostFrac >= 0.001), lostFrac
}

// reportIface reports a real-NIC row: ns/pkt is the low quantile of its
// uncontended windows' (nsPerPkt), the rest is of all its windows.
func reportIface(b *testing.B, s iface.Sample, nsPerPkt float64, contended measure.Contended) {
	b.Helper()
	p := s.Packets()
	clocks().Report(b, 0, "ns/op")
	clocks().Report(b, float64(p)/s.Duration.Seconds(), "pps")
	if p > 0 && !math.IsInf(nsPerPkt, 0) {
		clocks().Report(b, nsPerPkt, "ns/pkt")
	}
	busy := s.Busy()
	clocks().Diag(b, busy, "rx-cpu-busy")
	clocks().Diag(b, float64(s.Missed), "lost-pkts")
	rxBound, lostFrac := ifaceRxBound(s)
	clocks().Diag(b, lostFrac, "lost-frac")
	clocks().Report(b, harness.OneIf(rxBound), "rx-bound")
	contended.Report(b)
}

func ifaceVerdict(s iface.Sample) string {
	p, busy := s.Packets(), s.Busy()
	rxBound, _ := ifaceRxBound(s)
	var msg strings.Builder
	switch {
	case p == 0:
		msg.WriteString("NO TRAFFIC: the receiver saw no frames; is the generator sending to this device?")
	case rxBound:
		fmt.Fprintf(&msg, "receiver-bound: busiest receiving CPU %.0f%% in softirq, NIC dropped %d frames before XDP", 100*busy, s.Missed)
	default:
		fmt.Fprintf(&msg, "NOT RECEIVER-BOUND: busiest receiving CPU %.0f%% in softirq and no NIC drops: pps is the offered rate, not the receiver's capacity; ns/pkt is still its CPU cost", 100*busy)
	}
	fmt.Fprintf(&msg, "\n  frames per RX queue and CPU over %v:\n%s", s.Duration.Round(time.Millisecond), harness.Indent(s.RX.Table(), "  "))
	return msg.String()
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
		run.requireUnits(t, w, "capacity-pps", "sec/pkt", "gen-sec/pkt", "lost-pkts", "lost-frac")
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

// TestAttachIface runs the real-NIC mode through its flags, pointed at the
// receiving end of a veth rig in a suite namespace, with the rig's
// generator standing in for the external one.
func TestAttachIface(t *testing.T) {
	host.RequireRoot(t)
	tr := rig.NewTraffic(t, 2)
	before := takeSnapshot(t)

	stop := tr.Flood(100_000)
	run := runVerbose(t, nil, "-test.run=^$", "-test.bench=^BenchmarkAttach$", "-test.benchtime=1x",
		"-bpfbench.iface="+tr.Pair.B.Name, "-bpfbench.iface-netns="+tr.NS.Name, "-bpfbench.duration=1s")
	_, sendErr := stop()
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	stdout, stderr := run.stdout, run.stderr
	var names []string
	for _, n := range run.order {
		names = append(names, n+"-")
		if v, _ := run.value(n, "pps"); v <= 0 {
			t.Errorf("%s: %v pps with traffic flowing", n, v)
		}
		run.requireUnits(t, n, "sec/pkt", "rx-cpu-busy", "lost-pkts", "rx-bound", "steal-frac")
		if !probe.Emulated() { // an emulated core's load is nobody's
			run.requireUnits(t, n, "contended-frac")
		}
	}
	for i, w := range []string{"Attach/dev=v0b/action=drop/mode=native/prog=drop", "Attach/dev=v0b/action=pass/mode=native/prog=drop"} {
		if i >= len(names) || !strings.HasPrefix(names[i], w+"-") {
			t.Errorf("results %q, want %s-<procs> at %d\n%s", names, w, i, stdout)
		}
	}
	if !strings.Contains(stderr, "XDP on v0b (netns "+tr.NS.Name+") at 1s") || !strings.Contains(stderr, "softirq") {
		t.Errorf("no per-queue table on stderr:\n%s", stderr)
	}
	requireNoConfigLines(t, stderr)
	h, err := tr.NS.Handle()
	if err != nil {
		t.Fatal(err)
	}
	if l, err := h.LinkByName(tr.Pair.B.Name); err != nil || (l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached) {
		t.Errorf("%s left with XDP attached (%v)", tr.Pair.B.Name, err)
	}
	requireSameState(t, before)
}

// TestAttachIfaceRefuses checks that the flags refuse, before changing
// anything, a device carrying the default route or the management address,
// and malformed combinations; override lets the default-route device in.
func TestAttachIfaceRefuses(t *testing.T) {
	host.RequireRoot(t)
	ns := host.NewNetns(t)
	ns.AddVeth(t, 2, 1)
	h, err := ns.Handle()
	if err != nil {
		t.Fatal(err)
	}
	for dev, ip := range map[string]net.IP{"v0b": net.IPv4(198, 18, 5, 2), "v1b": net.IPv4(198, 18, 6, 2)} {
		l, err := h.LinkByName(dev)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}}); err != nil {
			t.Fatal(err)
		}
		if dev == "v0b" {
			if err := h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IPv4(198, 18, 5, 1)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := takeSnapshot(t)
	bench := []string{"-test.run=^$", "-test.bench=^BenchmarkAttach$", "-test.benchtime=1x", "-bpfbench.duration=200ms"}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default-route", nil, []string{"-bpfbench.iface=v0b", "-bpfbench.iface-netns=" + ns.Name}, "carries a default route"},
		{"veth-peer", nil, []string{"-bpfbench.iface=v0a", "-bpfbench.iface-netns=" + ns.Name}, "veth peer of v0b"},
		{"management", []string{"SSH_CONNECTION=198.18.6.9 40000 198.18.6.2 22"}, []string{"-bpfbench.iface=v1b", "-bpfbench.iface-netns=" + ns.Name}, "management address"},
		{"missing", nil, []string{"-bpfbench.iface=nosuch0", "-bpfbench.iface-netns=" + ns.Name}, "no such device"},
		{"override-alone", nil, []string{"-bpfbench.iface-override"}, "need -bpfbench.iface"},
		{"duration", nil, []string{"-bpfbench.duration=1ms"}, "-bpfbench.duration=1ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, err := runSuite(t, c.env, append(bench, c.args...)...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("got %v, want exit status 2\n%s\n%s", err, stdout, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr does not say %q:\n%s", c.want, stderr)
			}
			if strings.Contains(stdout, "BenchmarkAttach/") {
				t.Errorf("benchmarks ran:\n%s", stdout)
			}
		})
	}
	for _, dev := range []string{"v0a", "v0b", "v1b"} {
		if l, err := h.LinkByName(dev); err != nil || (l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached) {
			t.Errorf("%s: XDP attached after a refusal (%v)", dev, err)
		}
	}
	requireSameState(t, before)

	t.Run("override", func(t *testing.T) {
		stdout, stderr, err := runSuite(t, nil, append(bench, "-bpfbench.iface=v0b", "-bpfbench.iface-netns="+ns.Name, "-bpfbench.iface-override", "-test.v")...)
		if err != nil {
			t.Fatalf("with override: %v\n%s\n%s", err, stdout, stderr)
		}
		if !strings.Contains(stdout, "BenchmarkAttach/dev=v0b/") {
			t.Errorf("no results with override:\n%s", stdout)
		}
		if !strings.Contains(stderr, "NO TRAFFIC") {
			t.Errorf("nothing sends to v0b, but the run did not say so:\n%s", stderr)
		}
	})
	requireSameState(t, before)
}
