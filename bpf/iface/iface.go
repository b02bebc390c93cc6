package iface

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"bpfbench/bpf"
	"bpfbench/bpf/host"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The attach family on a user's real NIC, xdp_rxq_info style: a receiver
// attached to a named device that an external generator sends to, its
// per-CPU, per-queue counters sampled for a while. This is the one place the
// suite changes a device it did not create, so it refuses a device whose loss
// would cut the machine off, and it leaves the device's XDP state as it was.

// Target names a device: Name in the network namespace mounted at
// Netns, or in the process's own namespace when Netns is "".
type Target struct {
	Name  string
	Netns string
}

func (t Target) String() string {
	if t.Netns == "" {
		return t.Name
	}
	return fmt.Sprintf("%s (netns %s)", t.Name, t.Netns)
}

// NetnsPath resolves a namespace as `ip netns` names it (a name under
// /run/netns) or as a path.
func NetnsPath(name string) string {
	if name == "" || strings.Contains(name, "/") {
		return name
	}
	return filepath.Join("/run/netns", name)
}

// Do runs fn on a locked thread inside the target's namespace, then puts the
// thread back, as Netns.Do does for the suite's own namespaces.
func (t Target) Do(fn func() error) error {
	if t.Netns == "" {
		return fn()
	}
	return host.DoIn(NetnsPath(t.Netns), fn)
}

// Device is a device Check accepted.
type Device struct {
	Target
	Index  int
	Queues int // RX queues
}

// ErrUnsafe is wrapped by Check's refusals: a device the real-NIC mode
// will not touch (the machine's own, one with a program, loopback).
var ErrUnsafe = errors.New("not safe to attach to")

// Check decides whether the attach family may attach to t. It only
// reads (links, addresses and routes over netlink) and refuses:
//   - a device that does not exist, or is a loopback device;
//   - a device that already has an XDP program: the suite replaces nobody's
//     program (it could not put a bpf_link-attached one back), so detach it
//     first;
//   - unless override: a device that carries a default route (IPv4 or IPv6,
//     any routing table, any multipath leg), the device holding the
//     management address (the server address of $SSH_CONNECTION), and the
//     devices under those (bond or bridge ports, a VLAN's or macvlan's lower
//     device, a veth's peer), whose XDP program sees their traffic first.
func Check(t Target, override bool) (Device, error) {
	ifc := Device{Target: t}
	var links []netlink.Link
	var routes []netlink.Route
	addrs := map[int][]net.IP{}
	err := t.Do(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		defer h.Close()
		if links, err = h.LinkList(); err != nil {
			return fmt.Errorf("list devices: %w", err)
		}
		// Table RT_TABLE_UNSPEC with the table filter: every table, so a
		// default route of a policy-routing table counts too.
		routes, err = h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("list routes: %w", err)
		}
		as, err := h.AddrList(nil, netlink.FAMILY_ALL)
		if err != nil {
			return fmt.Errorf("list addresses: %w", err)
		}
		for _, a := range as {
			addrs[a.LinkIndex] = append(addrs[a.LinkIndex], a.IP)
		}
		return nil
	})
	if err != nil {
		return ifc, fmt.Errorf("inspect %s: %w", t, err)
	}
	var dev netlink.Link
	for _, l := range links {
		if l.Attrs().Name == t.Name {
			dev = l
		}
	}
	if dev == nil {
		return ifc, fmt.Errorf("-bpfbench.iface=%s: no such device in %s", t.Name, nsDesc(t))
	}
	a := dev.Attrs()
	ifc.Index, ifc.Queues = a.Index, max(1, a.NumRxQueues)
	if a.Flags&net.FlagLoopback != 0 {
		return ifc, fmt.Errorf("-bpfbench.iface=%s: %w: a loopback device gets no external traffic", t.Name, ErrUnsafe)
	}
	if x := a.Xdp; x != nil && x.Attached {
		return ifc, fmt.Errorf("-bpfbench.iface=%s: %w: it already has XDP program id %d attached (mode %d); bpfbench replaces nobody's program: detach it first (ip link set dev %s xdp off)",
			t.Name, ErrUnsafe, x.ProgId, x.AttachMode, t.Name)
	}
	refused := Refused(links, routes, addrs, managementIPs(os.Getenv("SSH_CONNECTION")))
	if why, ok := refused[ifc.Index]; ok && !override {
		return ifc, fmt.Errorf("-bpfbench.iface=%s: %w: it %s; an XDP program there could cut this machine off. Pass -bpfbench.iface-override too if you mean it (from a console, not over that device)",
			t.Name, ErrUnsafe, why)
	}
	return ifc, nil
}

func nsDesc(t Target) string {
	if t.Netns == "" {
		return "this network namespace"
	}
	return "network namespace " + t.Netns
}

// managementIPs reads the server address of $SSH_CONNECTION
// ("client-ip client-port server-ip server-port").
func managementIPs(sshConnection string) []net.IP {
	f := strings.Fields(sshConnection)
	if len(f) != 4 {
		return nil
	}
	if ip := net.ParseIP(f[2]); ip != nil {
		return []net.IP{ip}
	}
	return nil
}

// Refused returns the devices the real-NIC mode refuses without
// override, by ifindex, each with the reason: the devices with a default
// route or a management address, and, repeatedly, the devices under a
// refused one (its bond or bridge ports, the lower device of a VLAN or
// macvlan, a veth's peer), because an XDP program there sees the refused
// device's traffic before it does.
func Refused(links []netlink.Link, routes []netlink.Route, addrs map[int][]net.IP, mgmt []net.IP) map[int]string {
	name := map[int]string{}
	for _, l := range links {
		name[l.Attrs().Index] = l.Attrs().Name
	}
	refused := map[int]string{}
	add := func(idx int, why string) bool {
		if _, ok := refused[idx]; ok || idx <= 0 {
			return false
		}
		refused[idx] = why
		return true
	}
	for _, r := range routes {
		if !isDefault(r) {
			continue
		}
		why := fmt.Sprintf("carries a default route (%s)", routeDesc(r))
		add(r.LinkIndex, why)
		for _, nh := range r.MultiPath {
			add(nh.LinkIndex, why)
		}
	}
	for idx, ips := range addrs {
		for _, ip := range ips {
			for _, m := range mgmt {
				if ip.Equal(m) {
					add(idx, fmt.Sprintf("holds the management address %s ($SSH_CONNECTION)", m))
				}
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, l := range links {
			a := l.Attrs()
			if why, ok := refused[a.MasterIndex]; ok && a.MasterIndex > 0 {
				changed = add(a.Index, fmt.Sprintf("is a port of %s, which %s", name[a.MasterIndex], why)) || changed
			}
			// ParentIndex is IFLA_LINK: a VLAN's or macvlan's lower
			// device, a veth's peer. It is an ifindex of another
			// namespace when NetNsID is set: ignore it then.
			if why, ok := refused[a.Index]; ok && a.ParentIndex > 0 && a.NetNsID < 0 {
				changed = add(a.ParentIndex, fmt.Sprintf("is the lower device or veth peer of %s, which %s", a.Name, why)) || changed
			}
		}
	}
	return refused
}

func isDefault(r netlink.Route) bool {
	if r.Type != 0 && r.Type != unix.RTN_UNICAST {
		return false // unreachable, blackhole, local...
	}
	if r.Dst == nil {
		return true
	}
	ones, _ := r.Dst.Mask.Size()
	return ones == 0
}

func routeDesc(r netlink.Route) string {
	fam := "IPv4"
	if r.Family == unix.AF_INET6 || (r.Dst != nil && r.Dst.IP.To4() == nil) || (r.Gw != nil && r.Gw.To4() == nil) {
		fam = "IPv6"
	}
	s := fam
	if r.Gw != nil {
		s += " via " + r.Gw.String()
	}
	if r.Table != 0 && r.Table != unix.RT_TABLE_MAIN {
		s += fmt.Sprintf(", table %d", r.Table)
	}
	return s
}

// xdpState reads the device's XDP attachment.
func (ifc Device) xdpState() (netlink.LinkXdp, error) {
	var x netlink.LinkXdp
	err := ifc.link(func(l netlink.Link) error {
		if l.Attrs().Name != ifc.Name {
			return fmt.Errorf("ifindex %d is now %s, not %s", ifc.Index, l.Attrs().Name, ifc.Name)
		}
		if l.Attrs().Xdp != nil {
			x = *l.Attrs().Xdp
		}
		return nil
	})
	return x, err
}

// link reads the device over netlink in its namespace and hands it to fn.
func (ifc Device) link(fn func(netlink.Link) error) error {
	return ifc.Do(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		defer h.Close()
		l, err := h.LinkByIndex(ifc.Index)
		if err != nil {
			return fmt.Errorf("find %s: %w", ifc.Name, err)
		}
		return fn(l)
	})
}

// An Attached is a program Attach attached to a device: the link (Update
// switches programs without a detach), the mode it got and why native
// failed.
type Attached struct {
	Link      link.Link
	Mode      bpf.XDPMode
	NativeErr error

	ifc    Device
	before netlink.LinkXdp
}

// Attach attaches prog to ifc as a bpf_link, natively when the driver can
// and generically otherwise. Close detaches it; a bpf_link also detaches
// by itself if the process dies.
func Attach(ifc Device, prog *ebpf.Program) (*Attached, error) {
	before, err := ifc.xdpState()
	if err != nil {
		return nil, err
	}
	if before.Attached {
		return nil, fmt.Errorf("%s: %w: XDP program id %d is attached", ifc, ErrUnsafe, before.ProgId)
	}
	a := &Attached{ifc: ifc, before: before}
	err = ifc.Do(func() error {
		var err error
		for _, a.Mode = range bpf.XDPModes {
			flags, _ := a.Mode.Flags()
			if a.Link, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifc.Index, Flags: flags}); err == nil {
				return nil
			}
			if a.Mode == bpf.XDPNative {
				a.NativeErr = err
			}
		}
		return fmt.Errorf("attach XDP to %s: native: %v; generic: %w", ifc, a.NativeErr, err)
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// Close detaches the program and returns an error unless the device is
// back to the XDP state it had before Attach: this is the one device the
// suite did not create, and it must be left as it was found.
func (a *Attached) Close() error {
	if err := a.Link.Close(); err != nil {
		return fmt.Errorf("detach XDP from %s: %w", a.ifc, err)
	}
	after, err := a.ifc.xdpState()
	if err != nil {
		return fmt.Errorf("read XDP state of %s after detaching: %w", a.ifc, err)
	}
	if after.Attached != a.before.Attached || after.ProgId != a.before.ProgId {
		return fmt.Errorf("%s: XDP state after detaching is %+v, before attaching it was %+v", a.ifc, after, a.before)
	}
	return nil
}
