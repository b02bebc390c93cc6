package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf"

	"github.com/cilium/ebpf"
)

// cpumapVariant is one row of the cpumap family: where the frame goes after
// the receiving veth's XDP program (none: nowhere, it drops it in place;
// cpumap: to another CPU) and what drops it.
type cpumapVariant struct{ redirect, drop string }

func (v cpumapVariant) name() string { return fmt.Sprintf("redirect=%s/drop=%s", v.redirect, v.drop) }

// cpumapVariants is the table: the in-place XDP_DROP first, then the two
// drops after a redirect to the other CPU: by the stack, for want of a UDP
// socket (CLAIMS.md §4's UdpNoPorts column), and by a program of the CPUMAP
// entry before any skb is built (the early drop).
var cpumapVariants = []cpumapVariant{
	{"none", "xdp"}, {"cpumap", "noports"}, {"cpumap", "cpumap-prog"},
}

// cpumapQsize is the ring of each CPUMAP entry, as xdp-tools'
// xdp-redirect-cpu sets it.
const cpumapQsize = 2048

// BenchmarkCpumap answers: how many packets per second does a CPU take
// when XDP redirects them to it through a CPUMAP, with the stack dropping
// them at UDP for want of a socket (CLAIMS.md §4: 3.18-3.52 Mpps, 284-314 ns
// per packet, on 2019 hardware) or a CPUMAP program dropping them before an
// skb is built, and what does the redirect cost the receiving CPU next to
// dropping in place?
//
// On the attach rig (bpf.Traffic), cpu_redirect (progs/cpumap.c) runs
// natively on the receiving veth and redirects every frame to the CPU the
// generator does not use. At the end of each NAPI poll the frames go in
// bulk into that CPU's ring, which its kthread (cpumap/<cpu>/map:<id>)
// empties: it runs the entry's program if there is one (cpumap_drop:
// XDP_DROP), or builds an skb and hands it to the stack, which drops it at
// UDP (the namespace's Udp NoPorts counter in /proc/net/snmp, read from
// inside the namespace, is the count of frames that got there). When the
// ring is full the redirecting CPU drops the frame.
//
// Each redirect row is measured in rounds with the generator alone and
// with the in-place drop, so besides the rig's metrics (the generating and
// redirecting CPU) it reports delta-ns/pkt: the redirect's cost to that CPU
// over XDP_DROP. The other CPU is the remote stage: remote-ns/pkt is its
// kthread's CPU time (and its ksoftirqd's) per frame it handled, and when it
// could not keep up (frames lost at its ring while it was busy at least 90%
// of the time: remote-bound 1) remote-pps = 1e9/remote-ns/pkt is the rate
// that CPU sustains, the figure CLAIMS.md §4 reports. A remote stage that
// kept up has no rate to report (CLAIMS.md §5); stderr says which it was.
func BenchmarkCpumap(b *testing.B) {
	requireRoot(b)
	o := benchOptions()
	remote := otherCPU(o.CPU)
	if remote < 0 {
		b.Skip("the cpumap family needs two CPUs: frames are redirected to the one the generator does not use")
	}
	t := bpf.NewTraffic(b, 2)
	spec, err := bpf.LoadCpumap()
	if err != nil {
		b.Fatal(err)
	}
	if err := spec.Variables[bpf.CpumapVarTargetCpu].Set(uint32(remote)); err != nil {
		b.Fatalf("set target_cpu: %v", err)
	}
	var objs bpf.CpumapObjects
	bpf.Require(b, spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{bpf.CpumapMapRxCount: t.RxCount()},
	}), "load the cpumap programs")
	b.Cleanup(func() { objs.Close() })
	snmp := openSNMP(b, t.NS)
	inPlace := bpf.Receiver{Action: "drop", Mode: "native", Prog: "drop"}

	for _, v := range cpumapVariants {
		var msg string
		b.Run(v.name(), func(b *testing.B) {
			if v.redirect == "none" {
				res, err := t.Bench(b.N, inPlace, nil, o, b.ResetTimer)
				if err != nil {
					b.Fatal(err)
				}
				reportAttach(b, inPlace, res)
				msg = attachVerdict(inPlace, res)
				return
			}
			var prog *ebpf.Program
			count := func() (uint64, error) { return snmp.read("Udp", "NoPorts") }
			if v.drop == "cpumap-prog" {
				prog = objs.CpumapDrop
				count = func() (uint64, error) { return sumPerCPU(objs.RemoteCount) }
			}
			clock := setCPUMap(b, objs.Cpus, remote, prog)
			kthread := &stage{read: func() (uint64, int64, error) {
				n, err := count()
				if err != nil {
					return 0, 0, err
				}
				ns, err := clock()
				return n, ns, err
			}}
			in0, err := snmp.read("Udp", "InDatagrams")
			if err != nil {
				b.Fatal(err)
			}
			r := bpf.Receiver{Action: "cpumap", Mode: "native", Prog: v.drop, Ext: &bpf.Ext{
				Name:      fmt.Sprintf("XDP_REDIRECT to CPU %d, dropped by %s", remote, v.drop),
				Prog:      objs.CpuRedirect,
				Delivered: kthread.watch(count),
				Before:    kthread.before,
				After:     kthread.after,
			}}
			res, err := t.Bench(b.N, r, &inPlace, o, func() { b.ResetTimer(); kthread.reset() })
			if err != nil {
				b.Fatal(err)
			}
			if kthread.pkts == 0 {
				b.Fatalf("no frames reached CPU %d's %s drop (generated %d, redirected %d)", remote, v.drop, res.Total.Gen, res.Total.Received())
			}
			if in1, err := snmp.read("Udp", "InDatagrams"); err != nil {
				b.Fatal(err)
			} else if in1 != in0 {
				b.Fatalf("Udp InDatagrams moved by %d: a socket in the namespace received frames meant for no socket", in1-in0)
			}
			reportAttach(b, r, res)
			kthread.report(b, res.LostFrac)
			msg = cpumapVerdict(r, res, kthread, remote)
		})
		if msg != "" {
			fmt.Fprintf(os.Stderr, "Cpumap/%s: %s\n", v.name(), msg)
		}
	}
}

// setCPUMap points the CPUMAP entry of cpu at a ring of cpumapQsize frames
// and prog (nil: none, frames go to the stack), and returns a clock of the
// CPU time spent on that CPU's frames: its new kthread plus its ksoftirqd
// (softirqs the kthread raised and did not run itself). Replacing an entry
// starts a new kthread; the old one is stopped from a work item, so this
// waits until one kthread of the name is left. The entry is deleted at
// cleanup.
func setCPUMap(tb testing.TB, m *ebpf.Map, cpu int, prog *ebpf.Program) func() (int64, error) {
	tb.Helper()
	val := struct {
		Qsize  uint32
		ProgFD int32
	}{Qsize: cpumapQsize}
	if prog != nil {
		val.ProgFD = int32(prog.FD())
	}
	if err := m.Put(uint32(cpu), val); err != nil {
		tb.Fatalf("set CPUMAP entry %d (qsize %d, program %v): %v", cpu, cpumapQsize, prog, err)
	}
	tb.Cleanup(func() {
		if err := m.Delete(uint32(cpu)); err != nil {
			tb.Errorf("delete CPUMAP entry %d: %v", cpu, err)
		}
	})
	info, err := m.Info()
	if err != nil {
		tb.Fatalf("CPUMAP info: %v", err)
	}
	id, _ := info.ID()
	// /proc/<pid>/comm has a kthread's full name since Linux 6.1 (its
	// first 15 bytes before).
	comm := fmt.Sprintf("cpumap/%d/map:%d", cpu, id)
	var kthread, soft int32
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids := findKthreads(comm, comm[:min(len(comm), 15)])
		if len(pids) == 1 {
			kthread = bpf.ProcessClock(pids[0])
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("want one kernel thread %q for CPUMAP entry %d, found %d", comm, cpu, len(pids))
		}
	}
	soft, err = bpf.KthreadClock(fmt.Sprintf("ksoftirqd/%d", cpu))
	if err != nil {
		tb.Fatal(err)
	}
	return func() (int64, error) {
		k, err := clockNs(kthread)
		if err != nil {
			return 0, fmt.Errorf("CPU %d's cpumap kthread: %w", cpu, err)
		}
		s, err := clockNs(soft)
		return k + s, err
	}
}

func cpumapVerdict(r bpf.Receiver, res bpf.TrafficResult, kthread *stage, cpu int) string {
	return kthread.verdict("the cpumap kthread", cpu, res.LostFrac, "at its ring") +
		fmt.Sprintf("\n  delta-ns/pkt (%.1f ± %.1f) is what the redirect costs the redirecting CPU over XDP_DROP", res.Delta, res.DeltaCI95) +
		"\n  " + attachVerdict(r, res)
}

// sumPerCPU sums key 0 of a per-CPU counter map.
func sumPerCPU(m *ebpf.Map) (uint64, error) {
	var vs []uint64
	if err := m.Lookup(uint32(0), &vs); err != nil {
		return 0, fmt.Errorf("read %v: %w", m, err)
	}
	var n uint64
	for _, v := range vs {
		n += v
	}
	return n, nil
}

// findKthreads returns the PIDs whose /proc/<pid>/comm is comm or short.
func findKthreads(comm, short string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if c := strings.TrimSpace(string(b)); err == nil && (c == comm || c == short) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stage meters the part of an attach run that happens on the other CPU
// (the AF_XDP application, the cpumap kthread, the UDP receiving thread)
// over the generator calls of one receiver (bpf.Ext's Before and After): the
// packets it handled, the time it was busy, and the wall time from the start
// of each call to the last packet it handled, so that the wait for frames
// to settle does not count as idle.
type stage struct {
	// read returns running counts: packets handled, busy ns.
	read func() (pkts uint64, busy int64, err error)
	// now is the wall clock (nil: time.Now).
	now func() time.Time

	p0     uint64 // at the start of the current call
	b0     int64
	t0     time.Time // zero outside a call
	last   uint64
	lastAt time.Time

	pkts       uint64 // totals since reset
	busy, wall int64
}

func (s *stage) before() error {
	p, busy, err := s.read()
	if err != nil {
		return err
	}
	s.p0, s.b0, s.t0 = p, busy, s.clock()
	s.last, s.lastAt = p, s.t0
	return nil
}

// poll notes when the packet count last moved.
func (s *stage) poll() error {
	if s.t0.IsZero() {
		return nil
	}
	p, _, err := s.read()
	if err != nil {
		return err
	}
	if p != s.last {
		s.last, s.lastAt = p, s.clock()
	}
	return nil
}

// watch wraps a count of delivered frames (bpf.Ext.Delivered) so that the
// rig's readings while frames settle also note the stage's progress.
func (s *stage) watch(delivered func() (uint64, error)) func() (uint64, error) {
	return func() (uint64, error) {
		if err := s.poll(); err != nil {
			return 0, err
		}
		return delivered()
	}
}

func (s *stage) after() error {
	if err := s.poll(); err != nil {
		return err
	}
	p, busy, err := s.read()
	if err != nil {
		return err
	}
	s.pkts += p - s.p0
	s.busy += busy - s.b0
	s.wall += int64(s.lastAt.Sub(s.t0))
	s.t0 = time.Time{}
	return nil
}

func (s *stage) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *stage) reset() { s.pkts, s.busy, s.wall = 0, 0, 0 }

func (s *stage) nsPerPkt() float64 { return float64(s.busy) / float64(max(s.pkts, 1)) }

func (s *stage) busyFrac() float64 { return float64(s.busy) / float64(max(s.wall, 1)) }

// stageBusy is the busy share above which a stage that lost frames was
// saturated: it lost them for want of CPU time, not because something else
// had its CPU.
const stageBusy = 0.9

// bound reports whether the stage limited the run: it lost at least
// bpf.MaxLostFrac of the frames offered to it while busy at least
// stageBusy of the time. Its time per packet is then its rate.
func (s *stage) bound(lostFrac float64) bool {
	return s.pkts > 0 && lostFrac >= bpf.MaxLostFrac && s.busyFrac() >= stageBusy
}

// verdict says in words what the stage was, for stderr: the bottleneck
// (remote-pps is its rate), a stage that kept up (no rate), or one that
// lost frames without being busy (other tasks held its CPU, or it slept
// while its queue overflowed: no rate either). where says where frames
// were lost ("at its ring").
func (s *stage) verdict(what string, cpu int, lostFrac float64, where string) string {
	lost := fmt.Sprintf("%.1f%% of frames lost %s", 100*lostFrac, where)
	switch {
	case s.bound(lostFrac):
		return fmt.Sprintf("REMOTE-BOUND: %s on CPU %d was the bottleneck, busy %.0f%% of the time, %s: remote-pps %.3g (%.1f ns per packet) is its rate",
			what, cpu, 100*s.busyFrac(), lost, 1e9/s.nsPerPkt(), s.nsPerPkt())
	case lostFrac >= bpf.MaxLostFrac:
		return fmt.Sprintf("NO RATE: %s on CPU %d was busy only %.0f%% of the time, yet %s: it waited for its CPU (other tasks ran there: use a quiet machine) or slept while frames piled up; "+
			"remote-ns/pkt (%.1f) is still its CPU time per packet", what, cpu, 100*s.busyFrac(), lost, s.nsPerPkt())
	}
	return fmt.Sprintf("NOT REMOTE-BOUND: %s on CPU %d kept up (busy %.0f%% of the time, %s): no rate for it here; remote-ns/pkt (%.1f) is its CPU time per packet, waiting for frames included",
		what, cpu, 100*s.busyFrac(), lost, s.nsPerPkt())
}

// report adds the remote-* metrics; remote-pps only for a stage that was
// the bottleneck, since otherwise it is not a rate anything sustained.
func (s *stage) report(b *testing.B, lostFrac float64) {
	b.Helper()
	b.ReportMetric(s.nsPerPkt(), "remote-ns/pkt")
	b.ReportMetric(s.busyFrac(), "remote-cpu-busy")
	b.ReportMetric(b2f(s.bound(lostFrac)), "remote-bound")
	if s.bound(lostFrac) {
		b.ReportMetric(1e9/s.nsPerPkt(), "remote-pps")
	}
}

// snmpFile is a network namespace's /proc/net/snmp, opened from inside it:
// the open file keeps reading that namespace's counters from any thread.
// (/proc/net is /proc/self/net, the main thread's namespace, so a thread in
// the namespace opens /proc/thread-self/net/snmp.)
type snmpFile struct{ f *os.File }

func openSNMP(tb testing.TB, ns *bpf.Netns) *snmpFile {
	tb.Helper()
	var f *os.File
	err := ns.Do(func() error {
		var err error
		f, err = os.Open("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		tb.Fatalf("open /proc/net/snmp of %s: %v", ns.Name, err)
	}
	tb.Cleanup(func() { f.Close() })
	return &snmpFile{f: f}
}

// read returns counter name of protocol proto ("Udp", "NoPorts").
func (s *snmpFile) read(proto, name string) (uint64, error) {
	buf := make([]byte, 16<<10)
	n, err := s.f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return 0, fmt.Errorf("read /proc/net/snmp: %w", err)
	}
	var header []string
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != proto+":" {
			continue
		}
		if header == nil {
			header = fields
			continue
		}
		for i, h := range header {
			if h == name && i < len(fields) {
				var v uint64
				if _, err := fmt.Sscan(fields[i], &v); err != nil {
					return 0, fmt.Errorf("/proc/net/snmp %s %s: %q: %w", proto, name, fields[i], err)
				}
				return v, nil
			}
		}
		break
	}
	return 0, fmt.Errorf("/proc/net/snmp has no %s %s", proto, name)
}

// TestStage checks the remote stage's bookkeeping with a fake clock and
// counters: time after the last packet is not wall time, calls of other
// receivers (outside before/after) count for nothing, and only a stage
// that lost frames while busy is called the bottleneck.
func TestStage(t *testing.T) {
	var pkts uint64
	var busy int64
	now := time.Unix(0, 0)
	s := &stage{
		read: func() (uint64, int64, error) { return pkts, busy, nil },
		now:  func() time.Time { return now },
	}
	step := func(d time.Duration, p uint64, b int64) {
		now = now.Add(d)
		pkts += p
		busy += b
	}
	// A call: 1000 packets in 10 µs of busy time over 10 µs, then 5 µs
	// of settling with nothing to do.
	if err := s.before(); err != nil {
		t.Fatal(err)
	}
	step(4*time.Microsecond, 400, 4000)
	if err := s.poll(); err != nil {
		t.Fatal(err)
	}
	step(6*time.Microsecond, 600, 6000)
	if err := s.poll(); err != nil {
		t.Fatal(err)
	}
	step(5*time.Microsecond, 0, 0)
	if err := s.after(); err != nil {
		t.Fatal(err)
	}
	// Another receiver's call: the stage's counters move, but outside
	// before/after, and a poll there is ignored.
	step(time.Millisecond, 7, 7000)
	if err := s.poll(); err != nil {
		t.Fatal(err)
	}
	if s.pkts != 1000 || s.busy != 10000 || s.wall != 10000 {
		t.Errorf("pkts %d, busy %d, wall %d: want 1000, 10000, 10000", s.pkts, s.busy, s.wall)
	}
	if got := s.nsPerPkt(); got != 10 {
		t.Errorf("%v ns per packet, want 10", got)
	}
	for _, c := range []struct {
		lost float64
		busy int64 // of a second call of 1000 packets over 10 µs
		want bool
	}{
		{0.5, 10000, true},    // busy throughout, losing: the bottleneck
		{0, 10000, false},     // kept up
		{0.005, 10000, false}, // under MaxLostFrac
		{0.5, 5000, false},    // losing while idle half the time: its CPU was elsewhere
	} {
		s.reset()
		if err := s.before(); err != nil {
			t.Fatal(err)
		}
		step(10*time.Microsecond, 1000, c.busy)
		if err := s.after(); err != nil {
			t.Fatal(err)
		}
		if got := s.bound(c.lost); got != c.want {
			t.Errorf("lost %v, busy %v: bound %v, want %v", c.lost, s.busyFrac(), got, c.want)
		}
		if v := s.verdict("x", 0, c.lost, "here"); strings.HasPrefix(v, "REMOTE-BOUND") != c.want {
			t.Errorf("lost %v, busy %v: verdict %q", c.lost, s.busyFrac(), v)
		}
	}
	s.reset()
	if s.bound(0.5) {
		t.Error("a stage that handled no packets is called the bottleneck")
	}
}

// TestCpumapOutputParses runs the cpumap family as a user would: the
// in-place drop and both redirect rows give results, the redirect rows
// carry the paired delta and the remote CPU's stage, the stack's drops are
// the namespace's Udp NoPorts (the run fails when that counter does not
// move), and the run leaves nothing behind (the CPUMAP entry's kthread
// included).
func TestCpumapOutputParses(t *testing.T) {
	requireRoot(t)
	before := snapshot(t)
	kthreads := cpumapKthreads()
	f := runFamily(t, "^BenchmarkCpumap$")
	want := []string{"Cpumap/redirect=none/drop=xdp", "Cpumap/redirect=cpumap/drop=noports", "Cpumap/redirect=cpumap/drop=cpumap-prog"}
	if !slices.Equal(f.order, want) {
		t.Errorf("results %q, want %q (skipped: %v)", f.order, want, f.skips)
	}
	for _, name := range want {
		f.requireUnits(t, name, "pps", "sec/pkt", "gen-sec/pkt", "rx-sec/pkt", "lost-pkts", "lost-frac")
		if strings.Contains(name, "redirect=cpumap") {
			f.requireUnits(t, name, "delta-sec/pkt", "remote-sec/pkt", "remote-cpu-busy", "remote-bound")
		}
	}
	if !strings.Contains(f.stderr, "the cpumap kthread on CPU") {
		t.Errorf("stderr does not say what the remote CPU did:\n%s", f.stderr)
	}
	requireSameState(t, before)
	// The kthread of a deleted entry stops from a work item.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left []string
		for _, k := range cpumapKthreads() {
			if !slices.Contains(kthreads, k) {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cpumap kthreads left: %q", left)
		}
	}
}

// cpumapKthreads lists the running cpumap kthreads, as "pid comm".
func cpumapKthreads() []string {
	var ks []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if c := strings.TrimSpace(string(b)); err == nil && strings.HasPrefix(c, "cpumap/") {
			ks = append(ks, e.Name()+" "+c)
		}
	}
	return ks
}
