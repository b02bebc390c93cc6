package bench

import (
	"flag"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"bpfbench/bpf"
	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/internal/testutil"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"
)

// udpVariant is one row of the UDP family: how a socket receives the
// rig's datagrams, or none (no socket: the stack drops them at UDP).
type udpVariant struct{ recv string }

func (v udpVariant) name() string { return "recv=" + v.recv }

var flagUDPRecvmmsg = flag.Bool("bpfbench.udp-recvmmsg", false, "BenchmarkUDP: also read with recvmmsg, 64 datagrams per call (here its loop is about as fast as the sender, so most runs are refused)")

// udpVariants is the table: the in-kernel path alone first (the stack
// takes each frame up to the UDP lookup and drops it, Udp NoPorts), then a
// socket read one datagram per recv call (udpgso_bench_rx, docs/claims.md §5),
// and with recvmmsg up to 64 per call. recvmmsg is not in the default set:
// its loop is barely slower than the sender on the machine this was written
// on, so whether a run is saturated flips from run to run.
func udpVariants(recvmmsg bool) []udpVariant {
	vs := []udpVariant{{"none"}, {"recv"}}
	if recvmmsg {
		vs = append(vs, udpVariant{"recvmmsg"})
	}
	return vs
}

// udpBudget is how many datagrams the receiver reads after each poll
// before polling again, as udpgso_bench_rx's do_flush_udp; udpBatch is
// recvmmsg's vector.
const (
	udpBudget = 256
	udpBatch  = 64
)

// skMeminfoDrops is SK_MEMINFO_DROPS (include/uapi/linux/sock_diag.h): the
// socket's sk_drops in SO_MEMINFO, datagrams dropped at a full receive
// buffer (what Udp RcvbufErrors counts for the whole namespace).
const skMeminfoDrops, skMeminfoVars = 8, 9

// BenchmarkUDP answers: how many datagrams per second, and ns per
// datagram, does an unconnected UDP socket's receive loop take on one CPU
// when it is the bottleneck (docs/claims.md §5: udpgso_bench_rx, ~1.1M calls/s,
// and a result from a receiver that was not CPU-bound is no result)?
//
// On the attach rig (rig.Traffic) the receiving veth passes the generator's
// frames to the stack (a native XDP_PASS, as BenchmarkAttach's action=pass),
// which delivers them on the generating CPU to a socket bound to the
// namespace's own address and the frames' port. The receive loop runs on a
// thread pinned to the other CPU, as udpgso_bench_rx does: poll, then read
// until the socket is empty or 256 datagrams were read, with recv (one
// datagram per call, the payload copied) or recvmmsg (up to 64).
//
// The receiving thread is the remote stage: remote-ns/pkt is its CPU time
// (and its CPU's ksoftirqd's) per datagram, calls/s the calls that returned
// data per second of it, remote-pps = 1e9/remote-ns/pkt. Those are the
// receiver's rate only if it was saturated: the sender outran it, dropping
// at least 1% of datagrams at its full receive buffer, and it needs more CPU
// time per datagram than the generating CPU spends on one. A row that was
// not saturated prints no result (docs/claims.md §5): it skips with its figures
// in the reason, or fails if an earlier run of the same row was saturated
// (the machine changed under it). The rig's metrics (ns/pkt,
// rx-ns/pkt) are the generating CPU's: generating, and the stack up to the
// socket. The first row has no socket: the namespace's Udp NoPorts counter
// must count every frame.
func BenchmarkUDP(b *testing.B) {
	run := harness.NewRemote(b, benchOptions(), "the receiving thread")
	snmp, err := harness.OpenSNMP(run.T.NS)
	testutil.Must(b, record.Require, "open /proc/net/snmp", snmp, err)
	var rows []harness.RemoteRow
	for _, v := range udpVariants(*flagUDPRecvmmsg) {
		rows = append(rows, harness.RemoteRow{Name: v.name(), Start: func(b *testing.B) harness.RemotePath {
			if v.recv == "none" {
				return noSocket(snmp)
			}
			return v.socket(b, run, snmp)
		}})
	}
	run.Bench(b, rows)
}

// noSocket is the first row: the frames passed to the stack and dropped
// at UDP, which the namespace's Udp NoPorts counter must count.
func noSocket(snmp *harness.SNMP) harness.RemotePath {
	r := rig.Receiver{Action: rig.Pass, Mode: bpf.XDPNative, Prog: rig.RxDrop}
	r.Ext = &rig.Ext{Name: "XDP_PASS to the stack, no socket (Udp NoPorts)", Delivered: func() (uint64, error) { return snmp.Read("Udp", "NoPorts") }}
	return harness.RemotePath{R: r, Words: func(b *testing.B, res rig.TrafficResult, lost float64) (string, []measure.Figure) {
		return harness.TrafficWords(r, res) + fmt.Sprintf("\n  Udp NoPorts counted %d of %d frames the receiver passed", res.Total.Delivered(r), res.Total.Received()), nil
	}}
}

// socket sets up a socket row: a socket read by v.recv's loop on the other
// CPU. Whether the receiver is saturated is decided by the row's first
// run in this process and holds for every later one (-count): a row is
// measured in every run or skipped in every run, never failed because the
// load changed.
func (v udpVariant) socket(b *testing.B, run *harness.Remote, snmp *harness.SNMP) harness.RemotePath {
	b.Helper()
	decided, wasSaturated := udpSaturated[v.name()]
	if decided && !wasSaturated {
		record.Skipf(b, "NOT SATURATED in this process's first run of the row: skipped in every run (see its first skip for the figures)")
	}
	fd := openUDP(b, run.T.NS)
	rx := &udpReceiver{fd: fd, call: v.recv}
	times := rx.start(b, run.CPU)
	st := harness.NewStage(func() (uint64, error) { return rx.dgrams.Load(), nil }, times)
	// Calls and socket drops over the same calls as st.
	var calls, drops, c0, d0 uint64
	before := func() error {
		c0 = rx.calls.Load()
		d, err := sockDrops(fd)
		d0 = d
		return joinErr(err, st.Before())
	}
	after := func() error {
		d, err := sockDrops(fd)
		calls += rx.calls.Load() - c0
		drops += d - d0
		return joinErr(err, st.After())
	}
	r := rig.Receiver{Action: rig.Pass, Mode: bpf.XDPNative, Prog: rig.RxDrop, Ext: &rig.Ext{
		Name:      fmt.Sprintf("XDP_PASS to a UDP socket read with %s on CPU %d", v.recv, run.CPU),
		Delivered: st.Watch(func() (uint64, error) { return rx.dgrams.Load(), nil }),
		Before:    before,
		After:     after,
	}}
	return harness.RemotePath{R: r, Stage: st, Reset: func() { calls, drops = 0, 0 },
		// What the receiver lost is what its full receive buffer dropped.
		Lost: func(rig.TrafficResult) float64 { return float64(drops) / float64(st.Pkts+drops) },
		Words: func(b *testing.B, res rig.TrafficResult, dropFrac float64) (string, []measure.Figure) {
			callsPerSec := float64(calls) / (float64(st.Work) / 1e9)
			figures := fmt.Sprintf("%.3g calls/s, %.1f datagrams per call; %d datagrams dropped at its full receive buffer; the generating CPU spends %.1f ns per datagram (generating and the stack)",
				callsPerSec, float64(st.Pkts)/float64(max(calls, 1)), drops, res.Ns)
			verdict := st.Words("the receive loop", run.CPU, dropFrac, res.Ns, "at its full receive buffer")
			saturated := st.Bound(dropFrac, res.Ns)
			if !decided {
				udpSaturated[v.name()] = saturated
			}
			if !saturated && !decided {
				record.Skipf(b, "NOT SATURATED, no result (a rate needs the sender to outrun the receive loop: at least %.0f%% of datagrams dropped at its socket, and more CPU time per datagram in the loop than in the sender): %s; %s",
					100*rig.MaxLostFrac, verdict, figures)
			}
			msg := ""
			if !saturated {
				// Saturated in the first run, not in this one: the
				// row's figures, said to be the sender's limit.
				msg = "NOT SATURATED in this run (it was in the first): remote-bound 0, the rate is the sender's; "
			}
			msg += verdict + "; " + figures
			if other := int64(res.Lost) - int64(drops); float64(other) > rig.MaxLostFrac*float64(res.Total.Gen) {
				msg += fmt.Sprintf("\n  %d frames were lost before the socket", other)
			}
			return msg + "\n  " + harness.TrafficWords(r, res), []measure.Figure{{Unit: "calls/s", Value: callsPerSec}}
		}}
}

// udpSaturated holds, per row, whether its first run in this process
// found the receiver saturated.
var udpSaturated = map[string]bool{}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// openUDP opens an unconnected UDP socket in ns, bound to the address and
// port the rig's frames go to, and registers closing it.
func openUDP(tb testing.TB, ns *host.Netns) int {
	tb.Helper()
	var fd int
	err := ns.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("UDP socket: %w", err)
		}
		sa := &unix.SockaddrInet4{Port: 9, Addr: bpf.DstIP}
		if err := unix.Bind(fd, sa); err != nil {
			unix.Close(fd)
			return fmt.Errorf("bind UDP socket to %v:%d: %w", net.IP(bpf.DstIP[:]), sa.Port, err)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("%s: %v", ns.Name, err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	return fd
}

// sockDrops is the socket's count of datagrams dropped at its full
// receive buffer.
func sockDrops(fd int) (uint64, error) {
	var mem [skMeminfoVars]uint32
	l := uint32(unsafe.Sizeof(mem))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO, uintptr(unsafe.Pointer(&mem)), uintptr(unsafe.Pointer(&l)), 0)
	if errno != 0 {
		return 0, fmt.Errorf("SO_MEMINFO: %w", errno)
	}
	return uint64(mem[skMeminfoDrops]), nil
}

// udpReceiver is the receive loop.
type udpReceiver struct {
	fd   int
	call string // recv or recvmmsg

	dgrams, calls atomic.Uint64
	tid           atomic.Int32
}

// start runs the loop on a thread pinned to cpu until tb's cleanup, and
// returns running counts of its CPU time (the thread's, which leaves out
// the time it sleeps in poll, and the CPU's ksoftirqd's) and of the time it
// waited for its CPU.
func (u *udpReceiver) start(tb testing.TB, cpu int) func() (work, wait int64, err error) {
	tb.Helper()
	stop, err := harness.ServeOn(cpu, "UDP "+u.call+" loop", &u.tid, u.serve)
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
	thread := sched.ThreadClock(int(u.tid.Load()))
	stat := fmt.Sprintf("/proc/self/task/%d/schedstat", u.tid.Load())
	return func() (int64, int64, error) {
		c, err := sched.ClockNs(thread)
		if err != nil {
			return 0, 0, err
		}
		s, err := sched.ClockNs(soft)
		if err != nil {
			return 0, 0, err
		}
		_, wait, err := harness.Schedstat(stat)
		return c + s, wait, err
	}
}

// serve is udpgso_bench_rx's loop: poll (10 ms at most, to notice stop),
// then read until the socket is empty or udpBudget datagrams were read.
// The reads are raw system calls: MSG_DONTWAIT never blocks, and the Go
// runtime's bookkeeping around a blocking call would be measured with them.
func (u *udpReceiver) serve(stop *atomic.Bool) error {
	u.tid.Store(int32(unix.Gettid()))
	const size = 2048
	bufs := make([]byte, udpBatch*size)
	iovs := make([]unix.Iovec, udpBatch)
	msgs := make([]unix.Mmsghdr, udpBatch)
	for i := range msgs {
		iovs[i].Base = &bufs[i*size]
		iovs[i].SetLen(size)
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.Iovlen = 1
	}
	pfd := []unix.PollFd{{Fd: int32(u.fd), Events: unix.POLLIN}}
	for !stop.Load() {
		if _, err := unix.Poll(pfd, 10); err != nil && err != unix.EINTR {
			return fmt.Errorf("poll: %w", err)
		}
		for budget := udpBudget; budget > 0; {
			var n uintptr
			var errno unix.Errno
			if u.call == "recvmmsg" {
				n, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(u.fd), uintptr(unsafe.Pointer(&msgs[0])), udpBatch, unix.MSG_DONTWAIT, 0, 0)
			} else {
				_, _, errno = unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(u.fd), uintptr(unsafe.Pointer(&bufs[0])), size, unix.MSG_TRUNC|unix.MSG_DONTWAIT, 0, 0)
				n = 1
			}
			if errno == unix.EAGAIN {
				break
			}
			if errno != 0 {
				return fmt.Errorf("%s: %w", u.call, errno)
			}
			u.dgrams.Add(uint64(n))
			u.calls.Add(1)
			budget -= int(n)
		}
	}
	return nil
}

// TestUDPOutputParses runs the UDP family as a user would. The row without
// a socket gives a result in which Udp NoPorts counted every frame (no
// frame lost). Each socket row either gives a result that says its
// receiver was the bottleneck (remote-bound 1, with calls/s and
// remote-pps) or skips saying it was not saturated: never a result from an
// unsaturated receiver.
func TestUDPOutputParses(t *testing.T) {
	host.RequireRoot(t)
	requireLiveFrames(t)
	before := takeSnapshot(t)
	f := runFamily(t, "^BenchmarkUDP$")
	f.requireUnits(t, "UDP/recv=none", "capacity-pps", "sec/pkt", "rx-sec/pkt", "lost-pkts")
	if res := f.results["UDP/recv=none"]; res != nil {
		if lost, _ := f.value("UDP/recv=none", "lost-pkts"); lost != 0 {
			t.Errorf("Udp NoPorts missed %v frames", lost)
		}
	}
	for _, recv := range []string{"recv"} {
		name := "UDP/recv=" + recv
		res, reason := f.results[name], f.skips[name]
		switch {
		case res != nil && reason != "":
			t.Errorf("%s both gave a result and skipped", name)
		case res != nil:
			f.requireUnits(t, name, "remote-sec/pkt", "remote-pps", "calls/s", "remote-cpu-busy", "remote-cpu-wait", "remote-bound")
			if v, _ := f.value(name, "remote-bound"); v != 1 {
				t.Errorf("%s: a result with remote-bound %v", name, v)
			}
		case !strings.Contains(reason, "NOT SATURATED, no result"):
			t.Errorf("%s: no result and no refusal (skip reason %q)", name, reason)
		}
	}
	if u := f.units[benchfmt.UnitMetadataKey{Unit: "calls/s", Key: "better"}]; u == nil || u.Value != "higher" {
		t.Error("no Unit line says calls/s is better higher")
	}
	requireSameState(t, before)
}

// TestUDPReceiveLoop sends datagrams over the loopback of a private
// namespace and checks that both receive loops count every one, recv one
// per call and recvmmsg several.
func TestUDPReceiveLoop(t *testing.T) {
	host.RequireRoot(t)
	ns := host.NewNetns(t)
	for _, call := range []string{"recv", "recvmmsg"} {
		t.Run(call, func(t *testing.T) {
			var rfd, sfd int
			err := ns.Do(func() error {
				var err error
				if rfd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
					return err
				}
				if err := unix.Bind(rfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
					return err
				}
				sfd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(rfd); unix.Close(sfd) })
			to, err := unix.Getsockname(rfd)
			if err != nil {
				t.Fatal(err)
			}
			rx := &udpReceiver{fd: rfd, call: call}
			allowed, _ := sched.AllowedCPUs()
			last, _ := sched.PickCPU(-1, allowed)
			times := rx.start(t, harness.OtherCPU(last, allowed))
			// Fewer than the receive buffer holds: none can be dropped.
			const n = 64
			for i := 0; i < n; i++ {
				if err := unix.Sendto(sfd, []byte("bpfbench"), 0, to); err != nil {
					t.Fatal(err)
				}
			}
			for deadline := time.Now().Add(5 * time.Second); rx.dgrams.Load() < n && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if got := rx.dgrams.Load(); got != n {
				t.Fatalf("received %d of %d datagrams", got, n)
			}
			calls := rx.calls.Load()
			if call == "recv" && calls != n || call == "recvmmsg" && (calls == 0 || calls > n) {
				t.Errorf("%d datagrams in %d calls of %s", n, calls, call)
			}
			if work, _, err := times(); err != nil || work <= 0 {
				t.Errorf("the loop's CPU time: %d ns, %v", work, err)
			}
			if d, err := sockDrops(rfd); err != nil || d != 0 {
				t.Errorf("socket drops %d, %v", d, err)
			}
		})
	}
}
