package xsk

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestXSKCopyMode redirects frames from the rig's receiving veth to a
// copy-mode AF_XDP socket and checks that every frame reaches the
// application (rxdrop) or comes back to the sending end (l2fwd), with no
// drop in the socket's statistics. It also checks the rig's Ext hooks: the
// receiver's own program counts in the rig's counter, Before and After run
// once per call, and Delivered replaces the rig's count.
func TestXSKCopyMode(t *testing.T) {
	host.RequireRoot(t)
	cpu := testutil.LastCPU()
	allowed, _ := sched.AllowedCPUs()
	appCPU := harness.OtherCPU(cpu, allowed)
	if appCPU < 0 {
		t.Skip("needs two CPUs: the application spins on the one the generator does not use")
	}
	tr, err := rig.NewTraffic(2)
	testutil.Must(t, probe.Require, "traffic rig", tr, err)
	var objs bpf.AfxdpObjects
	spec, err := bpf.LoadAfxdp()
	if err != nil {
		t.Fatal(err)
	}
	probe.Require(t, spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{bpf.AfxdpMapRxCount: tr.RxCount()}}), "load afxdp.c")
	t.Cleanup(func() { objs.Close() })
	queue := cpu % tr.Queues
	// Fewer frames than the RX ring holds: none can be lost, however late
	// the application runs.
	const frames = xskRingSize / 2

	for _, app := range []App{RxDrop, L2Fwd} {
		t.Run(app.String(), func(t *testing.T) {
			var x *Socket
			err := tr.NS.Do(func() error {
				var err error
				x, err = Open(Config{Ifindex: tr.Pair.B.Index, Queue: queue})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := x.Close(); err != nil {
					t.Error(err)
				}
			})
			if err := objs.Xsks.Put(uint32(queue), uint32(x.FD())); err != nil {
				t.Fatal(err)
			}
			stop, err := harness.ServeOn(appCPU, "AF_XDP "+app.String(), &x.TID, func(stop *atomic.Bool) error { return x.Serve(app, stop) })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := stop(); err != nil {
					t.Error(err)
				}
			})

			var before, after int
			r := rig.Receiver{Mode: bpf.XDPNative, Ext: &rig.Ext{
				Name:   "AF_XDP " + app.String(),
				Prog:   objs.XskRedirect,
				Echoes: app.Echoes(),
				Before: func() error { before++; return nil },
				After:  func() error { after++; return nil },
			}}
			if app == RxDrop {
				r.Ext.Delivered = func() (uint64, error) { return x.Received.Load(), nil }
			}
			base, err := tr.Read()
			if err != nil {
				t.Fatal(err)
			}
			var c rig.Call
			err = sched.Pinned(cpu, func() error {
				if err := tr.Set(r); err != nil {
					return err
				}
				var err error
				c, err = tr.Run(r, frames)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.Restarts == 0 && c.Gen != frames {
				t.Errorf("generator made %d frames, asked for %d", c.Gen, frames)
			}
			if c.Received() != c.Gen || c.RX[queue][cpu] != c.Gen {
				t.Errorf("xsk_redirect counted %d of %d frames, %d on queue %d of CPU %d:\n%s", c.Received(), c.Gen, c.RX[queue][cpu], queue, cpu, c.RX.Table())
			}
			if before != 1 || after != 1 {
				t.Errorf("Before ran %d times, After %d: want once each per call", before, after)
			}
			if app == RxDrop && c.Delivered(r) != c.Ext {
				t.Errorf("delivered %d, but Ext.Delivered counted %d", c.Delivered(r), c.Ext)
			}
			// The application runs when its CPU lets it: wait for it.
			var got uint64
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				got = x.Received.Load()
				if app.Echoes() {
					now, err := tr.Read()
					if err != nil {
						t.Fatal(err)
					}
					got = now.Returned() - base.Returned()
				}
				if got >= c.Gen || time.Now().After(deadline) {
					break
				}
			}
			if got != c.Gen {
				t.Errorf("%d of %d frames reached the end of %s", got, c.Gen, app)
			}
			if app.Echoes() {
				for deadline := time.Now().Add(5 * time.Second); x.Completed.Load() < c.Gen && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
				if x.Forwarded.Load() != c.Gen || x.Completed.Load() != c.Gen {
					t.Errorf("forwarded %d, completed %d of %d", x.Forwarded.Load(), x.Completed.Load(), c.Gen)
				}
			}
			s, err := x.Stats()
			if err != nil {
				t.Fatal(err)
			}
			// Tx_ring_empty_descs counts kicks that found nothing to send: not a loss.
			if s.Rx_dropped+s.Rx_ring_full+s.Rx_fill_ring_empty_descs+s.Rx_invalid_descs+s.Tx_invalid_descs != 0 {
				t.Errorf("socket statistics: %+v, want no drops", s)
			}
		})
	}
}

// TestXSKZerocopyOnVeth checks that veth refuses a zero-copy socket with
// the errno the AF_XDP family skips on, and that the refused socket left
// the queue free for a copy-mode one.
func TestXSKZerocopyOnVeth(t *testing.T) {
	host.RequireRoot(t)
	ns := host.NewNetns(t)
	pairs, err := ns.AddVeth(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	pair := pairs[0]
	err = ns.Do(func() error {
		x, err := Open(Config{Ifindex: pair.B.Index, Zerocopy: true})
		if err == nil {
			return errors.Join(errors.New("veth accepted a zero-copy socket"), x.Close())
		}
		var be *BindError
		if !errors.As(err, &be) || !errors.Is(err, unix.EOPNOTSUPP) {
			return err
		}
		x, err = Open(Config{Ifindex: pair.B.Index})
		if err != nil {
			return err
		}
		return x.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}
