package iface

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func dev(index int, name string, master, parent int) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: index, Name: name, MasterIndex: master, ParentIndex: parent, NetNsID: -1}}
}

func cidr(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// TestRefused checks the refusal rules on a made-up machine: which
// devices carry a default route or the management address, and which sit
// under those.
func TestRefused(t *testing.T) {
	links := []netlink.Link{
		dev(1, "lo", 0, 0),
		dev(2, "eth0", 3, 0),     // port of br0
		dev(3, "br0", 0, 0),      // default route
		dev(4, "eth1", 0, 0),     // lower device of eth1.100
		dev(5, "eth1.100", 0, 4), // IPv6 default route, table 100
		dev(6, "eth2", 0, 0),     // management address
		dev(7, "eth3", 0, 0),     // multipath default leg
		dev(8, "eth4", 0, 0),     // free
		dev(9, "veth0", 0, 10),   // peer of veth1
		dev(10, "veth1", 0, 9),   // free pair
		&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: 11, Name: "cni0", ParentIndex: 3, NetNsID: 4}}, // peer in another netns
		dev(12, "eth5", 0, 0), // has only a non-default and a blackhole default route
	}
	routes := []netlink.Route{
		{LinkIndex: 3, Gw: net.ParseIP("192.0.2.1"), Table: unix.RT_TABLE_MAIN},
		{LinkIndex: 5, Dst: cidr("::/0"), Gw: net.ParseIP("2001:db8::1"), Table: 100, Family: unix.AF_INET6},
		{Dst: cidr("0.0.0.0/0"), Table: 200, MultiPath: []*netlink.NexthopInfo{{LinkIndex: 7}}},
		{LinkIndex: 12, Dst: cidr("198.51.100.0/24")},
		{LinkIndex: 12, Dst: cidr("0.0.0.0/0"), Type: unix.RTN_BLACKHOLE, Table: 300},
	}
	addrs := map[int][]net.IP{6: {net.ParseIP("203.0.113.5")}, 8: {net.ParseIP("203.0.113.6")}}
	mgmt := managementIPs("198.51.100.9 51234 203.0.113.5 22")

	got := Refused(links, routes, addrs, mgmt)
	want := map[int]string{
		2: "is a port of br0",
		3: "default route (IPv4 via 192.0.2.1)",
		4: "lower device or veth peer of eth1.100",
		5: "default route (IPv6 via 2001:db8::1, table 100)",
		6: "management address 203.0.113.5",
		7: "default route",
	}
	for idx, w := range want {
		if !strings.Contains(got[idx], w) {
			t.Errorf("ifindex %d: reason %q, want it to say %q", idx, got[idx], w)
		}
	}
	for idx, why := range got {
		if _, ok := want[idx]; !ok {
			t.Errorf("ifindex %d refused (%s), want it allowed", idx, why)
		}
	}
	if len(Refused(links, routes, addrs, nil)) != len(want)-1 {
		t.Errorf("without $SSH_CONNECTION the management device should be allowed")
	}
}

func TestManagementIPs(t *testing.T) {
	if ips := managementIPs("10.0.0.9 51234 10.0.0.2 22"); len(ips) != 1 || !ips[0].Equal(net.ParseIP("10.0.0.2")) {
		t.Errorf("got %v", ips)
	}
	for _, s := range []string{"", "garbage", "1 2 notanip 4"} {
		if ips := managementIPs(s); ips != nil {
			t.Errorf("%q: got %v", s, ips)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{"eth0": "eth0", "enp1s0f0-1": "enp1s0f0_1", "Wlan-x": "wlan-x", "a/b=c": "a_b_c"} {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// ifaceNS is a namespace with two veth pairs and a default route via v0b.
func ifaceNS(t *testing.T) (*host.Netns, []host.VethPair) {
	t.Helper()
	ns := host.NewNetns(t)
	pairs, err := ns.AddVeth(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ns.Handle()
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.LinkByName("v0b")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddrAdd(b, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(198, 18, 3, 2), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: b.Attrs().Index, Gw: net.IPv4(198, 18, 3, 1)}); err != nil {
		t.Fatal(err)
	}
	return ns, pairs
}

func passProg(t *testing.T) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestCheck applies the refusals to devices of a suite namespace.
func TestCheck(t *testing.T) {
	host.RequireRoot(t)
	ns, pairs := ifaceNS(t)
	target := func(name string) Target { return Target{Name: name, Netns: ns.Path()} }

	for _, name := range []string{"v0b", "v0a", "lo"} {
		_, err := Check(target(name), false)
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: got %v, want a refusal", name, err)
		}
	}
	if _, err := Check(target("v0b"), false); err == nil || !strings.Contains(err.Error(), "default route") || !strings.Contains(err.Error(), "-bpfbench.iface-override") {
		t.Errorf("refusal of v0b does not name the reason and the override: %v", err)
	}
	ifc, err := Check(target("v0b"), true)
	if err != nil {
		t.Fatalf("v0b with override: %v", err)
	}
	if ifc.Index != pairs[0].B.Index || ifc.Queues != 2 {
		t.Errorf("v0b: index %d, %d queues; want %d, 2", ifc.Index, ifc.Queues, pairs[0].B.Index)
	}
	if _, err := Check(target("lo"), true); !errors.Is(err, ErrUnsafe) {
		t.Errorf("lo with override: got %v, want a refusal", err)
	}
	if _, err := Check(target("v1b"), false); err != nil {
		t.Errorf("v1b: %v", err)
	}
	if _, err := Check(target("nosuch0"), true); err == nil || errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "no such device") {
		t.Errorf("missing device: got %v", err)
	}

	// A program attached by someone else: refused even with override, and
	// left in place.
	h, _ := ns.Handle()
	v1b, err := h.LinkByName("v1b")
	if err != nil {
		t.Fatal(err)
	}
	// The netlink attach of `ip link set dev v1b xdpgeneric obj ...`, made
	// from a thread inside the namespace.
	setXDP := func(fd int) error {
		return ns.Do(func() error { return netlink.LinkSetXdpFdWithFlags(v1b, fd, 2 /* XDP_FLAGS_SKB_MODE */) })
	}
	if err := setXDP(passProg(t).FD()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setXDP(-1); err != nil {
			t.Error(err)
		}
	})
	_, err = Check(target("v1b"), true)
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "already has XDP program") {
		t.Errorf("device with XDP: got %v", err)
	}
	if x, err := (Device{Target: target("v1b"), Index: pairs[1].B.Index}).xdpState(); err != nil || !x.Attached {
		t.Errorf("the other program was disturbed: %+v, %v", x, err)
	}
}

// TestAttachRestores attaches to a device of a suite namespace and
// checks its XDP state before, during and after.
func TestAttachRestores(t *testing.T) {
	host.RequireRoot(t)
	ns, _ := ifaceNS(t)
	ifc, err := Check(Target{Name: "v1b", Netns: ns.Path()}, false)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rig.LoadReceivers()
	testutil.Must(t, probe.Require, "load receivers", rs, err)
	t.Run("attached", func(t *testing.T) {
		a, err := Attach(ifc, rs.Prog(rig.Drop, rig.RxDrop))
		testutil.Must(t, probe.Require, "attach", a, err)
		if a.Mode != bpf.XDPNative || a.NativeErr != nil {
			t.Errorf("veth has native XDP, got %s (%v)", a.Mode, a.NativeErr)
		}
		if err := a.Link.Update(rs.Prog(rig.Pass, rig.RxParse)); err != nil {
			t.Errorf("switch program: %v", err)
		}
		if x, err := ifc.xdpState(); err != nil || !x.Attached {
			t.Errorf("not attached: %+v, %v", x, err)
		}
	})
	if x, err := ifc.xdpState(); err != nil || x.Attached {
		t.Errorf("still attached after cleanup: %+v, %v", x, err)
	}
}

// TestMeter points the real-NIC sampler at the receiving end of the
// traffic rig, as a user points it at a NIC, with the rig's generator as
// the external traffic: three windows, a table each, and their sum.
func TestMeter(t *testing.T) {
	host.RequireRoot(t)
	tr, err := rig.NewTraffic(2)
	testutil.Must(t, probe.Require, "traffic rig", tr, err)
	ifc, err := Check(Target{Name: tr.Pair.B.Name, Netns: tr.NS.Path()}, false)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rig.LoadReceivers()
	testutil.Must(t, probe.Require, "load receivers", rs, err)
	a, err := Attach(ifc, rs.Prog(rig.Drop, rig.RxDrop))
	testutil.Must(t, probe.Require, "attach", a, err)

	stop := tr.Flood(50_000)
	var out bytes.Buffer
	var s Window
	m, err := NewMeter(ifc, rs.RxCount(), &out)
	for i := 0; err == nil && i < 3; i++ {
		var w Window
		w, err = m.Next(100 * time.Millisecond)
		s = s.Add(w)
	}
	sent, sendErr := stop()
	if err != nil {
		t.Fatal(err)
	}
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	if s.Packets() == 0 || s.Packets() > sent {
		t.Errorf("sampled %d frames, %d sent", s.Packets(), sent)
	}
	// A table per window, and the windows' sum covers the 300 ms asked
	// for.
	if n := strings.Count(out.String(), "rxq"); n != 3 {
		t.Errorf("%d tables for 3 windows:\n%s", n, out.String())
	}
	if s.Duration < 300*time.Millisecond {
		t.Errorf("sampled for %v, asked for 300ms", s.Duration)
	}
	var perCPU uint64
	for _, n := range s.PerCPU() {
		perCPU += n
	}
	if perCPU != s.Packets() {
		t.Errorf("per-CPU frames sum to %d, total %d", perCPU, s.Packets())
	}
	if s.Duration < 300*time.Millisecond || len(s.Softirq) != len(s.Elapsed) || len(s.Softirq) == 0 {
		t.Errorf("duration %v, softirq %v, elapsed %v", s.Duration, s.Softirq, s.Elapsed)
	}
}

func TestReadCPUTicks(t *testing.T) {
	ticks, err := sched.ReadCPUTicks()
	if err != nil {
		t.Fatal(err)
	}
	if len(ticks) == 0 {
		t.Fatal("no CPUs")
	}
	for cpu, c := range ticks {
		if c.Total == 0 || c.Softirq+c.Steal > c.Total {
			t.Errorf("cpu%d: %+v", cpu, c)
		}
	}
}
