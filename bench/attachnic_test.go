package bench

// BenchmarkAttach on a user's real NIC (-bpfbench.iface): the receivers
// that leave an external generator's traffic alone, measured in windows
// of the device's counters through the rounds engine.

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/iface"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/internal/testutil"

	"github.com/vishvananda/netlink"
)

func ifaceTarget() iface.Target {
	return iface.Target{Name: *flagIface, Netns: *flagIfaceNetns}
}

// ifaceVariants are the real-NIC mode's receivers: every verdict that
// leaves the external generator's traffic alone (no tx, no redirect).
func ifaceVariants(sweep bool) []attachVariant {
	progs := []rig.RxProg{rig.RxDrop}
	if sweep {
		progs = rig.RxProgs
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
	rs, err := rig.LoadReceivers()
	testutil.Must(b, record.Require, "load receivers", rs, err)
	vs := ifaceVariants(*flagAttachSweep)
	a, err := iface.Attach(ifc, rs.Prog(vs[0].action, vs[0].prog))
	testutil.Must(b, record.Require, "attach the receiver", a, err)
	l, mode := a.Link, a.Mode
	if a.NativeErr != nil {
		fmt.Fprintf(os.Stderr, "Attach on %s: native XDP failed (%v): measuring generic XDP\n", ifc, a.NativeErr)
	}
	dev := iface.SanitizeName(ifc.Name)
	o := benchOptions()
	o.Duration = *flagDuration
	var rows []measure.Row
	for _, v := range vs {
		// A call is a window of the device's counters; its figure the
		// window's softirq ns per packet (none: +Inf, never the least).
		var total iface.Window
		rows = append(rows, measure.Row{
			Name: fmt.Sprintf("dev=%s/action=%s/mode=%s/prog=%s", dev, v.action, mode, v.prog),
			Start: func(b *testing.B) measure.Job {
				if err := l.Update(rs.Prog(v.action, v.prog)); err != nil {
					b.Fatalf("switch %s to %s/%s: %v", ifc, v.action, v.prog, err)
				}
				fmt.Fprintf(os.Stderr, "Attach on %s: %s XDP, program %s returning %s, for %v\n", ifc, mode, v.prog, v.action, *flagDuration)
				m, err := iface.NewMeter(ifc, rs.RxCount(), os.Stderr)
				if err != nil {
					b.Fatal(err)
				}
				window := func(ms uint32) (float64, error) {
					s, err := m.Next(time.Duration(ms) * time.Millisecond)
					total = total.Add(s)
					if s.Packets() == 0 {
						return math.Inf(1), err
					}
					return s.NsPerPkt(), err
				}
				return measure.Job{Streams: []measure.Stream{window}, Sizes: ifaceWindows, Reset: func() { total = iface.Window{} }}
			},
			Report: func(b *testing.B, r measure.Result) []measure.Figure {
				harness.Say(b, record, "", ifaceWords(total))
				return ifaceFigures(total, r.Ns)
			},
		})
	}
	measure.Family(b, o, rows)
}

// ifaceWindows are the real-NIC mode's calls, in ms: one second each,
// after a warm-up of a tenth.
var ifaceWindows = measure.CallSizes{Warm: 100, Min: 1000, Max: 1000}

// ifaceRxBound says whether a real-NIC sample measures the receiver: its
// busiest CPU was saturated, or the NIC dropped frames it had no time for.
func ifaceRxBound(s iface.Window) (bound bool, lostFrac float64) {
	p := s.Packets()
	if p+s.Missed > 0 {
		lostFrac = float64(s.Missed) / float64(p+s.Missed)
	}
	return p > 0 && (s.Busy() >= 0.9 || lostFrac >= 0.001), lostFrac
}

// ifaceFigures are a real-NIC row's own figures: ns/pkt is the low
// quantile of its uncontended windows' (nsPerPkt), the rest is of all its
// windows.
func ifaceFigures(s iface.Window, nsPerPkt float64) []measure.Figure {
	p := s.Packets()
	figs := []measure.Figure{{Unit: "pps", Value: float64(p) / s.Duration.Seconds()}}
	if p > 0 && !math.IsInf(nsPerPkt, 0) {
		figs = append(figs, measure.Figure{Unit: "ns/pkt", Value: nsPerPkt})
	}
	rxBound, lostFrac := ifaceRxBound(s)
	return append(figs,
		measure.Figure{Unit: "rx-cpu-busy", Value: s.Busy()},
		measure.Figure{Unit: "lost-pkts", Value: float64(s.Missed)},
		measure.Figure{Unit: "lost-frac", Value: lostFrac},
		measure.Figure{Unit: "rx-bound", Value: measure.OneIf(rxBound)})
}

func ifaceWords(s iface.Window) string {
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

// TestAttachIface runs the real-NIC mode through its flags, pointed at the
// receiving end of a veth rig in a suite namespace, with the rig's
// generator standing in for the external one.
func TestAttachIface(t *testing.T) {
	host.RequireRoot(t)
	tr, err := rig.NewTraffic(2)
	testutil.Must(t, record.Require, "traffic rig", tr, err)
	before := takeSnapshot(t)

	stop := tr.Flood(100_000)
	run := runVerbose(t, nil, "-test.run=^$", "-test.bench=^BenchmarkAttach$", "-test.benchtime=1x",
		"-bpfbench.iface="+tr.Pair.B.Name, "-bpfbench.iface-netns="+tr.NS.Path(), "-bpfbench.duration=1s")
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
	if !strings.Contains(stderr, "XDP on v0b (netns "+tr.NS.Path()+") at 1s") || !strings.Contains(stderr, "softirq") {
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
	if _, err := ns.AddVeth(2, 1); err != nil {
		t.Fatal(err)
	}
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
		{"default-route", nil, []string{"-bpfbench.iface=v0b", "-bpfbench.iface-netns=" + ns.Path()}, "carries a default route"},
		{"veth-peer", nil, []string{"-bpfbench.iface=v0a", "-bpfbench.iface-netns=" + ns.Path()}, "veth peer of v0b"},
		{"management", []string{"SSH_CONNECTION=198.18.6.9 40000 198.18.6.2 22"}, []string{"-bpfbench.iface=v1b", "-bpfbench.iface-netns=" + ns.Path()}, "management address"},
		{"missing", nil, []string{"-bpfbench.iface=nosuch0", "-bpfbench.iface-netns=" + ns.Path()}, "no such device"},
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
		stdout, stderr, err := runSuite(t, nil, append(bench, "-bpfbench.iface=v0b", "-bpfbench.iface-netns="+ns.Path(), "-bpfbench.iface-override", "-test.v")...)
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
