package rig

import (
	"errors"
	"testing"

	"bpfbench/bpf"
	"bpfbench/bpf/host"
	"bpfbench/bpf/host/snapshot"
	"bpfbench/bpf/probe"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

func progID(tb testing.TB, p *ebpf.Program) ebpf.ProgramID {
	tb.Helper()
	info, err := p.Info()
	if err != nil {
		tb.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		tb.Fatal("kernel does not report program IDs")
	}
	return id
}

// xdpOn returns the ID of the XDP program on each device of ns that has one.
func xdpOn(tb testing.TB, ns *host.Netns) map[string]uint32 {
	tb.Helper()
	h, err := ns.Handle()
	if err != nil {
		tb.Fatal(err)
	}
	links, err := h.LinkList()
	if err != nil {
		tb.Fatal(err)
	}
	on := map[string]uint32{}
	for _, l := range links {
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			on[l.Attrs().Name] = x.ProgId
		}
	}
	return on
}

func TestHolder(t *testing.T) {
	objs := testutil.LoadXDP(t)
	ns := host.NewNetns(t)
	h, err := NewHolder(ns, objs.Drop)
	testutil.Must(t, probe.Require, "dispatcher holder", h, err)
	if got, want := xdpOn(t, ns)["lo"], uint32(progID(t, objs.Drop)); got != want {
		t.Fatalf("lo has program %d, want drop (%d)", got, want)
	}
	// Many switches: some go through the flip program, none may leave it
	// attached.
	for i := 0; i < 8; i++ {
		p := objs.Pass
		if i%2 == 1 {
			p = objs.Drop
		}
		if err := h.Hold(p); err != nil {
			t.Fatal(err)
		}
		if got, want := xdpOn(t, ns)["lo"], uint32(progID(t, p)); got != want {
			t.Fatalf("switch %d: lo has program %d, want %d", i, got, want)
		}
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if on := xdpOn(t, ns); len(on) != 0 {
		t.Fatalf("after Release, XDP programs remain on %v", on)
	}
	if err := h.Hold(objs.Tx); err != nil {
		t.Fatalf("Hold after Release: %v", err)
	}
	if got, want := xdpOn(t, ns)["lo"], uint32(progID(t, objs.Tx)); got != want {
		t.Fatalf("lo has program %d after re-attach, want tx (%d)", got, want)
	}
}

func TestFiller(t *testing.T) {
	host.RequireRoot(t)
	for _, mode := range []link.XDPAttachFlags{link.XDPGenericMode, link.XDPDriverMode} {
		f, err := NewFiller(5, mode)
		testutil.Must(t, probe.Require, "fillers", f, err)
		if err := f.Set(3); err != nil {
			t.Fatal(err)
		}
		on := xdpOn(t, f.ns)
		if len(on) != 3 || f.Attached() != 3 {
			t.Fatalf("mode %d: Set(3) left programs on %v, Attached()=%d", mode, on, f.Attached())
		}
		ids := map[uint32]bool{}
		for _, id := range on {
			ids[id] = true
		}
		if len(ids) != 3 {
			t.Errorf("mode %d: fillers share programs (%v): the dispatcher would count them once", mode, on)
		}
		if err := f.Set(0); err != nil {
			t.Fatal(err)
		}
		if on := xdpOn(t, f.ns); len(on) != 0 {
			t.Fatalf("mode %d: Set(0) left programs on %v", mode, on)
		}
		for _, bad := range []int{-1, 6} {
			if err := f.Set(bad); err == nil {
				t.Errorf("Set(%d) on 5 fillers succeeded", bad)
			}
		}
	}
}

func TestCountXDPPrograms(t *testing.T) {
	host.RequireRoot(t)
	before, err := snapshot.CountXDPPrograms()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := bpf.LoadXDP()
	if err != nil {
		t.Fatal(err)
	}
	n := len(spec.Programs)
	testutil.LoadXDP(t) // n XDP programs
	var disp bpf.DispatcherObjects
	if err := bpf.LoadDispatcherObjects(&disp, nil); err != nil {
		t.Fatal(err)
	}
	defer disp.Close() // not XDP: must not count
	after, err := snapshot.CountXDPPrograms()
	if err != nil {
		t.Fatal(err)
	}
	if after-before != n {
		t.Errorf("loading %d XDP programs changed the count by %d (another process loading XDP programs at the same time would explain it)", n, after-before)
	}
}

// TestFillerAbove: after Above, the fillers lie above the measured
// program (as many as it reports), so it ranks first among any attached.
func TestFillerAbove(t *testing.T) {
	host.RequireRoot(t)
	p, err := bpf.ReturnProgram("bpfbench_meas", bpf.XDPDrop)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := NewFiller(6, link.XDPGenericMode)
	testutil.Must(t, probe.Require, "fillers", f, err)
	n, err := f.Above(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.progs) != 6 {
		t.Fatalf("%d fillers after Above, want 6", len(f.progs))
	}
	if err := f.Set(n); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Rank(p); err != nil || r != 0 {
		t.Errorf("with the %d fillers Above reported attached, the program ranks %d (err %v), want 0", n, r, err)
	}
	if err := f.Set(6); err != nil {
		t.Fatal(err)
	}
	if r, err := f.Rank(p); err != nil || r != 6-n {
		t.Errorf("with all 6 attached the program ranks %d (err %v), want %d below it", r, err, 6-n)
	}
	if _, err := f.Above(p); err == nil {
		t.Error("Above with fillers attached succeeded")
	}
}

// TestAttachXDPWaits attaches to a device whose link was just closed, which
// on 5.10 is busy for a moment, and gives up on a device another link holds.
func TestAttachXDPWaits(t *testing.T) {
	objs := testutil.LoadXDP(t)
	ns := host.NewNetns(t)
	opts := link.XDPOptions{Program: objs.Drop, Interface: LoopbackIfindex, Flags: link.XDPGenericMode}
	var held link.Link
	err := ns.Do(func() (err error) { held, err = attachXDP(opts); return err })
	testutil.Must(t, probe.Require, "XDP link on lo", held, err)
	opts.Program = objs.Pass
	err = ns.Do(func() error {
		l, err := attachXDP(opts)
		if err == nil {
			l.Close()
		}
		return err
	})
	if !errors.Is(err, unix.EBUSY) {
		t.Fatalf("attach beside a held link: %v, want EBUSY", err)
	}
	for i := range 4 {
		if err := held.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ns.Do(func() (err error) { held, err = attachXDP(opts); return err }); err != nil {
			t.Fatalf("attach %d right after a close: %v", i, err)
		}
	}
	if got, want := xdpOn(t, ns)["lo"], uint32(progID(t, objs.Pass)); got != want {
		t.Fatalf("lo has program %d, want pass (%d)", got, want)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
}
