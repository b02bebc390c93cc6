package host

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// Link is one network interface.
type Link struct {
	Name  string
	Index int
	MAC   net.HardwareAddr
}

// VethPair is the two ends of one veth pair; a frame sent on one end is
// received on the other.
type VethPair struct {
	A, B Link
}

// VethMAC is the fixed MAC address AddVeth gives end side ('a' or 'b') of
// pair i of a namespace: locally administered unicast 02:62:62:0a|0b:hi:lo.
func VethMAC(i int, side byte) net.HardwareAddr {
	s := byte(0x0a)
	if side == 'b' {
		s = 0x0b
	}
	return net.HardwareAddr{0x02, 0x62, 0x62, s, byte(i >> 8), byte(i)}
}

// AddVeth creates n veth pairs inside ns, named v<i>a and v<i>b with i
// counting on from earlier calls, each end with `queues` RX and TX queues and
// the fixed MAC address VethMAC(i, 'a' or 'b'), and sets both ends up. It
// configures the namespace over netlink (see Handle), never with `ip`. The
// pairs go away with the namespace.
func (ns *Netns) AddVeth(n, queues int) ([]VethPair, error) {
	if n <= 0 {
		return nil, nil
	}
	if queues <= 0 {
		queues = 1
	}
	h, err := ns.Handle()
	if err != nil {
		return nil, err
	}
	ns.mu.Lock()
	first := ns.nveth
	ns.nveth += n
	ns.mu.Unlock()

	pairs := make([]VethPair, 0, n)
	for i := first; i < first+n; i++ {
		a := Link{Name: fmt.Sprintf("v%da", i), MAC: VethMAC(i, 'a')}
		b := Link{Name: fmt.Sprintf("v%db", i), MAC: VethMAC(i, 'b')}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = a.Name
		attrs.Flags = net.FlagUp
		attrs.HardwareAddr = a.MAC
		attrs.NumTxQueues = queues
		attrs.NumRxQueues = queues
		veth := &netlink.Veth{
			LinkAttrs:        attrs,
			PeerName:         b.Name,
			PeerHardwareAddr: b.MAC,
			PeerTxQLen:       -1,
			PeerNumTxQueues:  uint32(queues),
			PeerNumRxQueues:  uint32(queues),
		}
		if err := h.LinkAdd(veth); err != nil {
			return pairs, fmt.Errorf("create veth %s/%s: %w", a.Name, b.Name, err)
		}
		a.Index = veth.Index
		// The peer is created down; LinkSetUp looks up its index.
		peer := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: b.Name}}
		if err := h.LinkSetUp(peer); err != nil {
			return pairs, fmt.Errorf("set %s up: %w", b.Name, err)
		}
		b.Index = peer.Index
		if a.Index == 0 || b.Index == 0 {
			return pairs, fmt.Errorf("veth %s/%s: no ifindex", a.Name, b.Name)
		}
		pairs = append(pairs, VethPair{A: a, B: b})
	}
	return pairs, nil
}
