package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/harness"
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
	"bpfbench/internal/testutil"

	"github.com/cilium/ebpf"
)

// cpumapVariant is one row of the cpumap family: where the frame goes after
// the receiving veth's XDP program (none: nowhere, it drops it in place;
// cpumap: to another CPU) and what drops it.
type cpumapVariant struct{ redirect, drop string }

func (v cpumapVariant) name() string { return fmt.Sprintf("redirect=%s/drop=%s", v.redirect, v.drop) }

// cpumapVariants is the table: the in-place XDP_DROP first, then the two
// drops after a redirect to the other CPU: by the stack, for want of a UDP
// socket (docs/claims.md §4's UdpNoPorts column), and by a program of the CPUMAP
// entry before any skb is built (the early drop).
var cpumapVariants = []cpumapVariant{
	{"none", "xdp"}, {"cpumap", "noports"}, {"cpumap", "cpumap-prog"},
}

// cpumapQsize is the ring of each CPUMAP entry, as xdp-tools'
// xdp-redirect-cpu sets it.
const cpumapQsize = 2048

// BenchmarkCpumap answers: how many packets per second does a CPU take
// when XDP redirects them to it through a CPUMAP, with the stack dropping
// them at UDP for want of a socket (docs/claims.md §4) or a CPUMAP program
// dropping them before an skb is built, and what does the redirect cost
// the receiving CPU next to dropping in place?
//
// On the attach rig (rig.Traffic), cpu_redirect (progs/cpumap.c) runs
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
// could not keep up (frames lost at its ring, and it needs more time per
// frame than the redirecting CPU: remote-bound 1) remote-pps =
// 1e9/remote-ns/pkt is the rate that CPU sustains, the figure docs/claims.md §4
// reports. A remote stage that
// kept up has no rate to report (docs/claims.md §5); stderr says which it was.
func BenchmarkCpumap(b *testing.B) {
	run := harness.NewRemote(b, benchOptions(), "the cpumap kthread that frames are redirected to")
	spec, err := bpf.LoadCpumap()
	if err != nil {
		b.Fatal(err)
	}
	if err := spec.Variables[bpf.CpumapVarTargetCpu].Set(uint32(run.CPU)); err != nil {
		b.Fatalf("set target_cpu: %v", err)
	}
	var objs bpf.CpumapObjects
	record.Require(b, spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{bpf.CpumapMapRxCount: run.T.RxCount()},
	}), "load the cpumap programs")
	b.Cleanup(func() { objs.Close() })
	snmp, err := harness.OpenSNMP(run.T.NS)
	testutil.Must(b, record.Require, "open /proc/net/snmp", snmp, err)
	inPlace := rig.Receiver{Action: rig.Drop, Mode: bpf.XDPNative, Prog: rig.RxDrop}
	var rows []harness.RemoteRow
	for _, v := range cpumapVariants {
		row := harness.RemoteRow{Name: v.name(), Kernel: &inPlace}
		if v.redirect != "none" {
			row = harness.RemoteRow{Name: v.name(), Start: func(b *testing.B) harness.RemotePath { return v.redirectPath(b, run, &objs, snmp, inPlace) }}
		}
		rows = append(rows, row)
	}
	run.Bench(b, rows)
}

// redirectPath sets up a redirect row: the CPUMAP entry of the other CPU,
// with the CPUMAP program that drops or without one (the stack drops at
// UDP), metered by what dropped the frames; measured against inPlace.
func (v cpumapVariant) redirectPath(b *testing.B, run *harness.Remote, objs *bpf.CpumapObjects, snmp *harness.SNMP, inPlace rig.Receiver) harness.RemotePath {
	b.Helper()
	var prog *ebpf.Program
	count := func() (uint64, error) { return snmp.Read("Udp", "NoPorts") }
	if v.drop == "cpumap-prog" {
		prog = objs.CpumapDrop
		count = func() (uint64, error) { return sumPerCPU(objs.RemoteCount) }
	}
	times := setCPUMap(b, objs.Cpus, run.CPU, prog)
	kthread := harness.NewStage(count, times)
	in0, err := snmp.Read("Udp", "InDatagrams")
	if err != nil {
		b.Fatal(err)
	}
	r := rig.Receiver{Mode: bpf.XDPNative, Ext: &rig.Ext{
		Name:      fmt.Sprintf("XDP_REDIRECT to CPU %d, dropped by %s", run.CPU, v.drop),
		Prog:      objs.CpuRedirect,
		Delivered: kthread.Watch(count),
		Before:    kthread.Before,
		After:     kthread.After,
	}}
	return harness.RemotePath{R: r, Ref: &inPlace, Stage: kthread, Words: func(b *testing.B, res rig.TrafficResult, lost float64) (string, []measure.Figure) {
		if in1, err := snmp.Read("Udp", "InDatagrams"); err != nil {
			b.Fatal(err)
		} else if in1 != in0 {
			b.Fatalf("Udp InDatagrams moved by %d: a socket in the namespace received frames meant for no socket", in1-in0)
		}
		return cpumapWords(r, res, kthread, run.CPU), nil
	}}
}

// setCPUMap points the CPUMAP entry of cpu at a ring of cpumapQsize frames
// and prog (nil: none, frames go to the stack), and returns running counts
// of the CPU time spent on that CPU's frames, its new kthread's plus its
// ksoftirqd's (softirqs the kthread raised and did not run itself), and of
// the time the kthread waited for the CPU. Replacing an entry
// starts a new kthread; the old one is stopped from a work item, so this
// waits until one kthread of the name is left. The entry is deleted at
// cleanup.
func setCPUMap(tb testing.TB, m *ebpf.Map, cpu int, prog *ebpf.Program) func() (work, wait int64, err error) {
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
	var pid int
	// The kernel starts the kthread when the entry is added; a loaded
	// machine may take seconds to run it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids := findKthreads(comm, comm[:min(len(comm), 15)])
		if len(pids) == 1 {
			pid = pids[0]
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("want one kernel thread %q for CPUMAP entry %d, found %d", comm, cpu, len(pids))
		}
	}
	soft, err := sched.KthreadClock(fmt.Sprintf("ksoftirqd/%d", cpu))
	if err != nil {
		tb.Fatal(err)
	}
	kthread := sched.ProcessClock(pid)
	stat := fmt.Sprintf("/proc/%d/schedstat", pid)
	return func() (int64, int64, error) {
		k, err := sched.ClockNs(kthread)
		if err != nil {
			return 0, 0, fmt.Errorf("CPU %d's cpumap kthread: %w", cpu, err)
		}
		s, err := sched.ClockNs(soft)
		if err != nil {
			return 0, 0, err
		}
		_, wait, err := harness.Schedstat(stat)
		return k + s, wait, err
	}
}

func cpumapWords(r rig.Receiver, res rig.TrafficResult, kthread *harness.Stage, cpu int) string {
	return kthread.Words("the cpumap kthread", cpu, res.LostFrac, res.Ns, "at its ring") +
		fmt.Sprintf("\n  delta-ns/pkt (%.1f ± %.1f) is what the redirect costs the redirecting CPU over XDP_DROP", res.Delta, res.DeltaCI95) +
		"\n  " + harness.TrafficWords(r, res)
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

// TestCpumapOutputParses runs the cpumap family as a user would: the
// in-place drop and both redirect rows give results, the redirect rows
// carry the paired delta and the remote CPU's stage, the stack's drops are
// the namespace's Udp NoPorts (the run fails when that counter does not
// move), and the run leaves nothing behind (the CPUMAP entry's kthread
// included).
func TestCpumapOutputParses(t *testing.T) {
	host.RequireRoot(t)
	requireLiveFrames(t)
	before := takeSnapshot(t)
	kthreads := cpumapKthreads()
	f := runFamily(t, "^BenchmarkCpumap$")
	want := []string{"Cpumap/redirect=none/drop=xdp", "Cpumap/redirect=cpumap/drop=noports", "Cpumap/redirect=cpumap/drop=cpumap-prog"}
	if !slices.Equal(f.order, want) {
		t.Errorf("results %q, want %q (skipped: %v)", f.order, want, f.skips)
	}
	for _, name := range want {
		f.requireUnits(t, name, "capacity-pps", "sec/pkt", "gen-sec/pkt", "rx-sec/pkt", "lost-pkts", "lost-frac")
		if strings.Contains(name, "redirect=cpumap") {
			f.requireUnits(t, name, "delta-sec/pkt", "remote-sec/pkt", "remote-cpu-busy", "remote-cpu-wait", "remote-bound")
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
