package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/bpf/xsk"

	"github.com/cilium/ebpf"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"
)

// afxdpVariant is one row of the AF_XDP family: an application (rxdrop:
// frames dropped; l2fwd: frames sent back out with their MAC addresses
// swapped) done in the kernel by XDP (mode kernel) or in user space
// through an AF_XDP socket in copy or zero-copy mode.
type afxdpVariant struct {
	app  xsk.App
	mode string
}

func (v afxdpVariant) name() string { return fmt.Sprintf("app=%s/mode=%s", v.app, v.mode) }

// afxdpVariants is the table: each application's in-kernel row first (its
// baseline: XDP_DROP, or XDP_TX with the MAC addresses swapped), then the
// socket's modes. veth has no zero-copy: that row skips saying why.
var afxdpVariants = []afxdpVariant{
	{xsk.RxDrop, "kernel"}, {xsk.RxDrop, "copy"}, {xsk.RxDrop, "zerocopy"},
	{xsk.L2Fwd, "kernel"}, {xsk.L2Fwd, "copy"}, {xsk.L2Fwd, "zerocopy"},
}

// kernelReceiver is the XDP program that does app in the kernel.
func (v afxdpVariant) kernelReceiver() rig.Receiver {
	if v.app.Echoes() {
		return rig.Receiver{Action: rig.Tx, Mode: bpf.XDPNative, Prog: rig.RxTouch}
	}
	return rig.Receiver{Action: rig.Drop, Mode: bpf.XDPNative, Prog: rig.RxDrop}
}

// BenchmarkAFXDP answers: what does it cost per packet to hand frames to
// user space through an AF_XDP socket instead of dropping or forwarding
// them in XDP (docs/claims.md §3: rx-drop in copy mode 13.07 Mpps = 76.5 ns per
// packet against XDP_DROP's 29.2 ns; l2fwd 3.20 Mpps against XDP_TX's
// 14.53)?
//
// On the attach rig (rig.Traffic), xsk_redirect (progs/afxdp.c) runs natively
// on the receiving veth and redirects every frame through an XSKMAP to an
// AF_XDP socket bound to the RX queue the generator's CPU fills; veth has no
// zero-copy, so the kernel copies each frame into the socket's UMEM and
// posts a descriptor on its RX ring (the same CPU that generates, as for
// every receiver of the rig). The application, on a thread pinned to the
// other CPU, returns the frames to the fill ring (rxdrop) or swaps their MAC
// addresses and sends them back out through the TX ring and sendto (l2fwd;
// in copy mode the kernel builds an skb per frame in that call, and the
// rig's sink on the sending end counts what comes back).
//
// Each socket row is measured in rounds with the generator alone and with
// its application's in-kernel row, so besides the rig's metrics
// (ns/pkt, rx-ns/pkt: the generating CPU) it reports delta-ns/pkt: what the
// generating CPU pays per packet to hand the frame to the socket instead of
// dropping or transmitting it in XDP. The application's side is the remote
// stage (remote-ns/pkt: its busy time per packet, spinning left out;
// remote-cpu-busy; remote-bound: 1 when it could not keep up, so
// remote-pps is its rate). Which side is the bottleneck is said on stderr:
// a pps figure is only the rate of the side that limits it (docs/claims.md §5).
func BenchmarkAFXDP(b *testing.B) {
	run := harness.NewRemote(b, benchOptions(), "the application")
	spec, err := bpf.LoadAfxdp()
	if err != nil {
		b.Fatal(err)
	}
	var objs bpf.AfxdpObjects
	record.Require(b, spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{bpf.AfxdpMapRxCount: run.T.RxCount()},
	}), "load the AF_XDP redirect program")
	b.Cleanup(func() { objs.Close() })
	var rows []harness.RemoteRow
	for _, v := range afxdpVariants {
		kernel := v.kernelReceiver()
		row := harness.RemoteRow{Name: v.name(), Kernel: &kernel}
		if v.mode != "kernel" {
			row = harness.RemoteRow{Name: v.name(), Start: func(b *testing.B) harness.RemotePath { return v.socket(b, run, &objs, kernel) }}
		}
		rows = append(rows, row)
	}
	run.Bench(b, rows)
}

// socket sets up a socket row: a socket bound to the RX queue the
// generator's CPU fills (veth puts a frame on the queue of the CPU that
// sent it), in the XSKMAP at that queue, served by the application on the
// other CPU; measured against kernel, the application done in XDP.
func (v afxdpVariant) socket(b *testing.B, run *harness.Remote, objs *bpf.AfxdpObjects, kernel rig.Receiver) harness.RemotePath {
	b.Helper()
	queue := run.O.CPU % run.T.Queues
	x := openXSK(b, run.T, queue, v.mode == "zerocopy")
	if err := objs.Xsks.Put(uint32(queue), uint32(x.FD())); err != nil {
		b.Fatalf("put the AF_XDP socket in the XSKMAP at queue %d: %v", queue, err)
	}
	stats0, err := x.Stats()
	if err != nil {
		b.Fatal(err)
	}
	times := serveXSK(b, x, v.app, run.CPU)
	// A packet is done when it is dropped (rxdrop) or its send has
	// completed (l2fwd); it is delivered when the socket received it, or
	// when it came back to the sending end, where the sink counts it.
	done := &x.Received
	delivered := func() (uint64, error) { return x.Received.Load(), nil }
	if v.app.Echoes() {
		done = &x.Completed
		delivered = func() (uint64, error) {
			c, err := run.T.Read()
			return c.Returned(), err
		}
	}
	app := harness.NewStage(func() (uint64, error) { return done.Load(), nil }, times)
	r := rig.Receiver{Mode: bpf.XDPNative, Ext: &rig.Ext{
		Name:      fmt.Sprintf("AF_XDP %s %s, queue %d", v.mode, v.app, queue),
		Prog:      objs.XskRedirect,
		Echoes:    v.app.Echoes(),
		Delivered: app.Watch(delivered),
		Before:    app.Before,
		After:     app.After,
	}}
	return harness.RemotePath{R: r, Ref: &kernel, Stage: app, Words: func(b *testing.B, res rig.TrafficResult, lost float64) (string, []measure.Figure) {
		stats1, err := x.Stats()
		if err != nil {
			b.Fatal(err)
		}
		return afxdpWords(r, res, app, run.CPU, xskStatsDiff(stats1, stats0)), nil
	}}
}

// openXSK binds a socket to queue of the rig's receiving end, from inside
// its namespace, and registers closing it. A zero-copy socket the driver
// refuses skips, naming the errno (veth: EOPNOTSUPP, it has no zero-copy
// support); every other error fails.
func openXSK(tb testing.TB, t *rig.Traffic, queue int, zerocopy bool) *xsk.Socket {
	tb.Helper()
	var x *xsk.Socket
	err := t.NS.Do(func() error {
		var err error
		x, err = xsk.Open(xsk.Config{Ifindex: t.Pair.B.Index, Queue: queue, Zerocopy: zerocopy})
		return err
	})
	if zerocopy && errors.Is(err, unix.EOPNOTSUPP) {
		record.Skipf(tb, "%s: %v: the driver has no AF_XDP zero-copy support", t.Pair.B.Name, err)
	}
	if err != nil {
		tb.Fatalf("%s: %v", t.Pair.B.Name, err)
	}
	tb.Cleanup(func() {
		if err := x.Close(); err != nil {
			tb.Errorf("close AF_XDP socket: %v", err)
		}
	})
	return x
}

// serveXSK runs app on x on a thread pinned to cpu until tb's cleanup,
// which stops it before the socket closes (cleanups run last-in first-out),
// and returns running counts of the ns the application worked and the ns
// it waited for its CPU. It spins, as xdpsock does, so that the kernel never
// has to wake it: its CPU time is all of its time, and its work is the
// wall time of its busy periods (Socket.Busy), plus its CPU's ksoftirqd's (an
// l2fwd send runs the receiving end's softirq on this CPU, and what it
// defers goes there). Time other tasks held the CPU inside a busy period
// counts as work; remote-cpu-wait says how much they held it in all.
func serveXSK(tb testing.TB, x *xsk.Socket, app xsk.App, cpu int) func() (work, wait int64, err error) {
	tb.Helper()
	stop, err := harness.ServeOn(cpu, "AF_XDP "+app.String(), &x.TID, func(stop *atomic.Bool) error { return x.Serve(app, stop) })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := stop(); err != nil {
			tb.Error(err)
		}
	})
	soft, serr := sched.KthreadClock(fmt.Sprintf("ksoftirqd/%d", cpu))
	if serr != nil {
		tb.Fatal(serr)
	}
	stat := fmt.Sprintf("/proc/self/task/%d/schedstat", x.TID.Load())
	return func() (int64, int64, error) {
		s, err := sched.ClockNs(soft)
		if err != nil {
			return 0, 0, err
		}
		_, wait, err := harness.Schedstat(stat)
		return int64(x.Busy()) + s, wait, err
	}
}

func xskStatsDiff(a, b unix.XDPStatistics) unix.XDPStatistics {
	return unix.XDPStatistics{
		Rx_dropped:               a.Rx_dropped - b.Rx_dropped,
		Rx_invalid_descs:         a.Rx_invalid_descs - b.Rx_invalid_descs,
		Tx_invalid_descs:         a.Tx_invalid_descs - b.Tx_invalid_descs,
		Rx_ring_full:             a.Rx_ring_full - b.Rx_ring_full,
		Rx_fill_ring_empty_descs: a.Rx_fill_ring_empty_descs - b.Rx_fill_ring_empty_descs,
		Tx_ring_empty_descs:      a.Tx_ring_empty_descs - b.Tx_ring_empty_descs,
	}
}

// afxdpWords says which side limited a socket row and so which of its
// figures is a rate.
func afxdpWords(r rig.Receiver, res rig.TrafficResult, app *harness.Stage, cpu int, s unix.XDPStatistics) string {
	msg := app.Words("the AF_XDP application", cpu, res.LostFrac, res.Ns, "on the way")
	if res.RxBound {
		msg += fmt.Sprintf("\n  KERNEL-BOUND: delta-ns/pkt (%.1f ± %.1f) is what handing a frame to the socket costs the receiving CPU over the in-kernel row", res.Delta, res.DeltaCI95)
	}
	return msg + "\n  " + harness.TrafficWords(r, res) +
		fmt.Sprintf("\n  socket: rx_dropped %d, rx_ring_full %d, rx_fill_ring_empty_descs %d, rx_invalid_descs %d, tx_invalid_descs %d",
			s.Rx_dropped, s.Rx_ring_full, s.Rx_fill_ring_empty_descs, s.Rx_invalid_descs, s.Tx_invalid_descs)
}

// TestAFXDPOutputParses runs the AF_XDP family as a user would: every row
// but zero-copy gives a result, the zero-copy rows skip naming the bind
// error, socket rows carry the paired delta and the application's stage,
// and the run leaves nothing behind.
func TestAFXDPOutputParses(t *testing.T) {
	host.RequireRoot(t)
	requireLiveFrames(t)
	before := takeSnapshot(t)
	f := runFamily(t, "^BenchmarkAFXDP$")
	want := []string{"AFXDP/app=rxdrop/mode=kernel", "AFXDP/app=rxdrop/mode=copy", "AFXDP/app=l2fwd/mode=kernel", "AFXDP/app=l2fwd/mode=copy"}
	if !slices.Equal(f.order, want) {
		t.Errorf("results %q, want %q", f.order, want)
	}
	for _, name := range want {
		f.requireUnits(t, name, "capacity-pps", "sec/pkt", "gen-sec/pkt", "rx-sec/pkt", "lost-pkts", "lost-frac")
		if strings.HasSuffix(name, "copy") {
			f.requireUnits(t, name, "delta-sec/pkt", "remote-sec/pkt", "remote-cpu-busy", "remote-cpu-wait", "remote-bound")
			if v, _ := f.value(name, "remote-bound"); v == 1 {
				f.requireUnits(t, name, "remote-pps")
			}
		} else if _, ok := f.results[name].Value("remote-sec/pkt"); ok {
			t.Errorf("%s, in the kernel, reports a user-space stage", name)
		}
	}
	for _, app := range []string{"rxdrop", "l2fwd"} {
		name := "AFXDP/app=" + app + "/mode=zerocopy"
		if reason, ok := f.skips[name]; !ok || !strings.Contains(reason, "XDP_ZEROCOPY") || !strings.Contains(reason, unix.EOPNOTSUPP.Error()) {
			t.Errorf("%s: skipped %v, reason %q: want the bind error", name, ok, reason)
		}
	}
	// remote-pps and remote-bound are diagnostics: their Unit lines are in
	// the diagnostics file (units.Diagnostic).
	for unit, better := range map[string]string{"remote-sec/pkt": "lower"} {
		if u := f.units[benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}]; u == nil || u.Value != better {
			t.Errorf("no Unit line says %s is better %s", unit, better)
		}
	}
	if !strings.Contains(f.stderr, "socket: rx_dropped") || !strings.Contains(f.stderr, "the AF_XDP application on CPU") {
		t.Errorf("stderr does not say what the socket and the application did:\n%s", f.stderr)
	}
	requireSameState(t, before)
}
