package bench

import (
	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// What the families on the traffic rig share: the two-CPU skeleton of
// AFXDP, Cpumap and UDP, the remote stage they meter, the rig's metrics
// and the verdict said on stderr.

// twoCPUs is the start of every family whose path ends on a second CPU
// (AFXDP, Cpumap, UDP): root, the options, and the CPU the remote stage
// runs on, or a skip naming what needs it.
func twoCPUs(b *testing.B, needs string) (o measure.BenchOptions, remote int) {
	b.Helper()
	host.RequireRoot(b)
	o = benchOptions()
	remote = otherCPU(o.CPU)
	if remote < 0 {
		why := ""
		if _, ok := probe.Icount(); ok {
			why = " (an instruction-counting guest has one vCPU: with two, one's work lands in the other's counts)"
		}
		probe.Skipf(b, "%s needs two CPUs: %s runs on the one the generator does not use%s", b.Name(), needs, why)
	}
	return o, remote
}

// inKernel measures r, a receiver that does the family's work in XDP
// alone (the baseline row), reports the rig's metrics and returns the
// verdict.
func inKernel(b *testing.B, t *rig.Traffic, r rig.Receiver, o measure.BenchOptions) string {
	b.Helper()
	res := t.Bench(b, r, nil, o, nil)
	reportAttach(b, r, res)
	return attachVerdict(r, res)
}

// say prints a row's verdict once, for its last run, on stderr, as
// "Family/row: msg", with -test.v only: a results file keeps benchmark
// lines, not paragraphs between them. A verdict that says the row's
// figure is not what it seems (its first words in capitals, such as
// "NOT REMOTE-BOUND: ...") is also flagged in the run's summary. No line
// starts "lowercase-word:", which benchfmt would read as a configuration
// line (go test merges stderr into stdout).
func say(b *testing.B, row, msg string) {
	if msg == "" {
		return
	}
	name := b.Name() + "/" + row
	if head, _, ok := strings.Cut(msg, ":"); ok && head == strings.ToUpper(head) && strings.ContainsAny(head, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		probe.FlagName(name, head)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "%s: %s\n", strings.TrimPrefix(name, "Benchmark"), msg)
	}
}

// serveOn runs serve on a thread pinned to cpu until tb's cleanup stops
// it, and waits until tid (which serve sets) says the thread started: the
// remote stage of AFXDP's application and UDP's receiver.
func serveOn(tb testing.TB, cpu int, what string, tid *atomic.Int32, serve func(stop *atomic.Bool) error) {
	tb.Helper()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = measure.Pinned(cpu, func() error { return serve(&stop) })
	}()
	tb.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
		if err != nil {
			tb.Errorf("%s on CPU %d: %v", what, cpu, err)
		}
	})
	for deadline := time.Now().Add(time.Second); tid.Load() == 0; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not start on CPU %d", what, cpu)
		}
	}
}

// otherCPU is a CPU other than cpu for a remote stage (the highest one
// below it, wrapping), or -1 on a machine with one.
func otherCPU(cpu int) int {
	n := runtime.NumCPU()
	if n < 2 {
		return -1
	}
	return (cpu + n - 1) % n
}

// stage meters the part of an attach run that happens on the other CPU
// (the AF_XDP application, the cpumap kthread, the UDP receiving thread)
// over the generator calls of one receiver (bpf.Ext's Before and After): the
// packets it handled, the CPU time it worked, the time it waited, runnable,
// for a CPU other tasks held, and the wall time from the start of each call
// to the last packet it handled (so that the wait for frames to settle is
// not counted). What is left of the wall time it was idle: asleep (a
// kthread, a receive loop in poll) or spinning with nothing to do (an
// AF_XDP application).
type stage struct {
	// read returns running counts: packets handled, ns worked, ns waited
	// for a CPU.
	read func() (pkts uint64, work, wait int64, err error)
	// now is the wall clock (nil: time.Now).
	now func() time.Time

	p0     uint64 // at the start of the current call
	w0, q0 int64
	t0     time.Time // zero outside a call
	last   uint64
	lastAt time.Time

	pkts             uint64 // totals since reset
	work, wait, wall int64
}

func (s *stage) before() error {
	p, work, wait, err := s.read()
	if err != nil {
		return err
	}
	s.p0, s.w0, s.q0, s.t0 = p, work, wait, s.clock()
	s.last, s.lastAt = p, s.t0
	return nil
}

// poll notes when the packet count last moved.
func (s *stage) poll() error {
	if s.t0.IsZero() {
		return nil
	}
	p, _, _, err := s.read()
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
	p, work, wait, err := s.read()
	if err != nil {
		return err
	}
	s.pkts += p - s.p0
	s.work += work - s.w0
	s.wait += wait - s.q0
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

func (s *stage) reset() { s.pkts, s.work, s.wait, s.wall = 0, 0, 0, 0 }

func (s *stage) nsPerPkt() float64 { return float64(s.work) / float64(max(s.pkts, 1)) }

func (s *stage) share(ns int64) float64 { return float64(ns) / float64(max(s.wall, 1)) }

// busyFrac is the share of the time the stage worked; waitFrac the share
// it waited for a CPU; idleFrac what is left, the share it had nothing to
// do.
func (s *stage) busyFrac() float64 { return s.share(s.work) }

func (s *stage) waitFrac() float64 { return s.share(s.wait) }

func (s *stage) idleFrac() float64 { return max(0, 1-s.busyFrac()-s.waitFrac()) }

// bound reports whether the stage limited the run: it lost at least
// bpf.MaxLostFrac of the frames offered to it, and it needs more CPU time
// per packet than the generating CPU spends making and handing one over
// (senderNs, the rig's ns/pkt), so that frames came faster than it could
// take them even had it run all the time. (A stage that lost frames
// although it was faster lost them to wake-up latency or bursts.) Its
// CPU time per packet is then its rate, per second of its CPU.
func (s *stage) bound(lostFrac, senderNs float64) bool {
	return s.pkts > 0 && lostFrac >= rig.MaxLostFrac && s.nsPerPkt() > senderNs
}

// verdict says in words what the stage was, for stderr: the bottleneck
// (remote-pps is its rate), a stage that kept up (no rate), or one that
// lost frames although it was the faster side (no rate either). where
// says where frames were lost ("at its ring").
func (s *stage) verdict(what string, cpu int, lostFrac, senderNs float64, where string) string {
	state := fmt.Sprintf("%.1f ns per packet against the generating CPU's %.1f; %.1f%% of frames lost %s; busy %.0f%%, waiting for its CPU %.0f%%, idle %.0f%% of the time",
		s.nsPerPkt(), senderNs, 100*lostFrac, where, 100*s.busyFrac(), 100*s.waitFrac(), 100*s.idleFrac())
	var msg string
	switch {
	case s.bound(lostFrac, senderNs):
		msg = fmt.Sprintf("REMOTE-BOUND: %s on CPU %d was the bottleneck (%s): remote-pps %.3g is its rate", what, cpu, state, 1e9/s.nsPerPkt())
	case lostFrac >= rig.MaxLostFrac:
		msg = fmt.Sprintf("NO RATE: %s on CPU %d lost frames although it was the faster side (%s): it slept, or waited for its CPU, while its queue filled; remote-ns/pkt is its CPU time per packet, waking up included", what, cpu, state)
	default:
		msg = fmt.Sprintf("NOT REMOTE-BOUND: %s on CPU %d kept up (%s): no rate for it here; remote-ns/pkt is its CPU time per packet, waking up included", what, cpu, state)
	}
	if s.waitFrac() > 0.1 {
		msg += "; other tasks held its CPU for part of the run (use a quiet machine)"
	}
	return msg
}

// report adds the remote-* metrics; remote-pps only for a stage that was
// the bottleneck, since otherwise it is not a rate anything sustained.
// remote-cpu-wait shows, run by run, whether other tasks held its CPU.
func (s *stage) report(b *testing.B, lostFrac, senderNs float64) {
	b.Helper()
	measure.Report(b, s.nsPerPkt(), "remote-ns/pkt")
	measure.Diag(b, s.busyFrac(), "remote-cpu-busy")
	measure.Diag(b, s.waitFrac(), "remote-cpu-wait")
	measure.Diag(b, b2f(s.bound(lostFrac, senderNs)), "remote-bound")
	if s.bound(lostFrac, senderNs) {
		measure.Diag(b, 1e9/s.nsPerPkt(), "remote-pps")
	}
}

// schedstat reads a thread's /proc/.../schedstat: the ns it ran and the
// ns it waited, runnable, for a CPU (CONFIG_SCHED_INFO; without it the
// file is missing, and a stage that waited counts as idle).
func schedstat(path string) (run, wait int64, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscan(string(b), &run, &wait); err != nil {
		return 0, 0, fmt.Errorf("%s: %q: %w", path, b, err)
	}
	return run, wait, nil
}

func openSNMP(tb testing.TB, ns *host.Netns) *snmpFile {
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

// snmpFile is a network namespace's /proc/net/snmp, opened from inside it:
// the open file keeps reading that namespace's counters from any thread.
// (/proc/net is /proc/self/net, the main thread's namespace, so a thread in
// the namespace opens /proc/thread-self/net/snmp.)
type snmpFile struct{ f *os.File }

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

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix)
}

func reportAttach(b *testing.B, r rig.Receiver, res rig.TrafficResult) {
	b.Helper()
	measure.Report(b, 0, "ns/op") // one op is not one packet: ns/pkt is the figure
	measure.Report(b, res.PPS, "capacity-pps")
	measure.Report(b, res.Ns, "ns/pkt")
	if res.HaveGen {
		measure.Diag(b, res.GenNs, "gen-ns/pkt")
	}
	if !r.GeneratorOnly() && res.HaveGen {
		measure.Report(b, res.RxNs, "rx-ns/pkt")
		if res.Rounds > 1 {
			measure.Report(b, res.RxCI95, "rx-ci95-ns")
		}
		measure.Report(b, b2f(res.RxBound), "rx-bound")
	}
	if res.HaveDelta {
		measure.Report(b, res.Delta, "delta-ns/pkt")
		if res.Rounds > 1 {
			measure.Report(b, res.DeltaCI95, "delta-ci95-ns")
		}
	}
	measure.Diag(b, float64(res.Lost), "lost-pkts")
	measure.Diag(b, res.LostFrac, "lost-frac")
	res.Load.Report(b)
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// attachVerdict says in words whether the result measures what it names.
func attachVerdict(r rig.Receiver, res rig.TrafficResult) string {
	total := res.Total
	counts := fmt.Sprintf("generated %d, received %d, returned %d, lost %d (%.2f%%)",
		total.Gen, total.Received(), total.Returned(), res.Lost, 100*res.LostFrac)
	switch {
	case r.GeneratorOnly():
		return fmt.Sprintf("generator alone: %.1f ns per frame made and dropped (%s). One CPU does both halves here "+
			"(veth receives on the sending CPU), so every receiver's ns/pkt includes this; rx-ns/pkt subtracts it pairwise.",
			res.Ns, counts)
	case res.LostFrac >= rig.MaxLostFrac:
		return "DOMINATED BY LOSSES: frames that never arrived cost the receiver nothing; " + counts
	case !res.HaveGen:
		return "plain mode: generating and receiving together, no bottleneck check; " + counts
	case !res.RxBound:
		return fmt.Sprintf("DOMINATED BY THE GENERATOR: it costs %.1f of %.1f ns per packet; read rx-ns/pkt (%.1f%s), not pps; %s",
			res.GenNs, res.Ns, res.RxNs, pm(res.RxCI95), counts)
	}
	return fmt.Sprintf("receiver-bound: receiving is %.1f%s of %.1f ns per packet (generating %.1f, on the same CPU); %s",
		res.RxNs, pm(res.RxCI95), res.Ns, res.GenNs, counts)
}

// pm formats a 95% confidence half-width, which one round does not have.
func pm(ci float64) string {
	if math.IsInf(ci, 0) || math.IsNaN(ci) {
		return ""
	}
	return fmt.Sprintf(" ± %.2f", ci)
}
