package bpf

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
)

// Snapshot is the part of the machine's state the suite may change: what
// its tests compare before and after a run to prove it left nothing behind.
type Snapshot struct {
	Namespaces []string          // bpfbench-* network namespaces
	XDPProgs   int               // XDP programs loaded, anywhere
	Links      int               // BPF links, of any type
	HostXDP    []string          // host-namespace devices with an XDP program
	Sysctls    map[string]string // the sysctls the suite may change
}

// SnapshotSysctls are the sysctls Snapshot reads.
var SnapshotSysctls = []string{
	"net.core.bpf_jit_harden",
	"net.core.bpf_jit_enable",
	"kernel.bpf_stats_enabled",
}

// TakeSnapshot reads the state. Call it from a thread in the host namespace.
func TakeSnapshot() (Snapshot, error) {
	var s Snapshot
	ents, err := os.ReadDir(NetnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), NetnsPrefix) {
			s.Namespaces = append(s.Namespaces, e.Name())
		}
	}
	if s.XDPProgs, err = CountXDPPrograms(); err != nil {
		return s, err
	}
	it := new(link.Iterator)
	for it.Next() {
		s.Links++
	}
	if err := it.Err(); err != nil {
		return s, fmt.Errorf("count BPF links: %w", err)
	}
	devs, err := netlink.LinkList()
	if err != nil {
		return s, fmt.Errorf("list host devices: %w", err)
	}
	for _, d := range devs {
		if x := d.Attrs().Xdp; x != nil && x.Attached {
			s.HostXDP = append(s.HostXDP, d.Attrs().Name)
		}
	}
	s.Sysctls = map[string]string{}
	for _, name := range SnapshotSysctls {
		v, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
		if err != nil {
			return s, err
		}
		s.Sysctls[name] = strings.TrimSpace(string(v))
	}
	return s, nil
}

// Diff describes how t differs from s, or returns "" when it does not.
func (s Snapshot) Diff(t Snapshot) string {
	var d []string
	if !slices.Equal(s.Namespaces, t.Namespaces) {
		d = append(d, fmt.Sprintf("namespaces %v -> %v", s.Namespaces, t.Namespaces))
	}
	if s.XDPProgs != t.XDPProgs {
		d = append(d, fmt.Sprintf("XDP programs %d -> %d", s.XDPProgs, t.XDPProgs))
	}
	if s.Links != t.Links {
		d = append(d, fmt.Sprintf("BPF links %d -> %d", s.Links, t.Links))
	}
	if !slices.Equal(s.HostXDP, t.HostXDP) {
		d = append(d, fmt.Sprintf("host devices with XDP %v -> %v", s.HostXDP, t.HostXDP))
	}
	for _, name := range SnapshotSysctls {
		if s.Sysctls[name] != t.Sysctls[name] {
			d = append(d, fmt.Sprintf("%s %s -> %s", name, s.Sysctls[name], t.Sysctls[name]))
		}
	}
	return strings.Join(d, "; ")
}
