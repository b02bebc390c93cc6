package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
)

// The skeleton of the families whose path ends on a second CPU (AFXDP,
// Cpumap, UDP), after the kernel selftests' bench.c: the harness is
// written once (remoteRun.bench), and a family is its setup and a table
// of rows, each a value (remoteRow).

// A remoteRun is one run of such a family: its options, the CPU its
// remote stage runs on, and the attach rig.
type remoteRun struct {
	o      measure.BenchOptions
	remote int
	t      *rig.Traffic
}

// newRemoteRun starts a family whose path ends on a second CPU: root, the
// options, the CPU the remote stage runs on (or a skip naming what needs
// it), and the attach rig.
func newRemoteRun(b *testing.B, needs string) *remoteRun {
	b.Helper()
	host.RequireRoot(b)
	o := benchOptions()
	remote := otherCPU(o.CPU)
	if remote < 0 {
		why := ""
		if clocks().Icount {
			why = " (an instruction-counting guest has one vCPU: with two, one's work lands in the other's counts)"
		}
		probe.Skipf(b, "%s needs two CPUs: %s runs on the one the generator does not use%s", b.Name(), needs, why)
	}
	return &remoteRun{o: o, remote: remote, t: rig.NewTraffic(b, 2)}
}

// A remoteRow is one row of such a family: a receiver that does the
// family's work in XDP alone (kernel: the family's baseline row), or a
// path to the other CPU that start sets up in the row's sub-benchmark.
type remoteRow struct {
	name   string
	kernel *rig.Receiver
	start  func(b *testing.B) remotePath
}

// A remotePath is what a row's start sets up: the receiver that takes
// the generator's frames, the in-kernel row it is measured against (nil:
// none), the stage that meters the other CPU (nil: none, the frames end
// in the kernel), and the row's own part of the result.
type remotePath struct {
	r     rig.Receiver
	ref   *rig.Receiver
	st    *stage
	reset func() // after the warm-up, beside the stage's
	// lost is the share of frames lost on the way to the stage (nil:
	// the rig's LostFrac).
	lost func(res rig.TrafficResult) float64
	// verdict checks what only this row knows, reports its own figures
	// and returns its words for stderr (say); it may skip the row.
	verdict func(b *testing.B, res rig.TrafficResult, lost float64) string
}

// bench measures every row as a sub-benchmark of b: the path set up, the
// rig measured (rig.Traffic.Bench), the rig's and the stage's metrics
// reported, the row's verdict said.
func (run *remoteRun) bench(b *testing.B, rows []remoteRow) {
	b.Helper()
	for _, row := range rows {
		var msg string
		probe.Run(b, row.name, func(b *testing.B) {
			if row.kernel != nil {
				res := run.t.Bench(b, *row.kernel, nil, run.o, nil)
				reportAttach(b, *row.kernel, res)
				msg = attachVerdict(*row.kernel, res)
				return
			}
			p := row.start(b)
			res := run.t.Bench(b, p.r, p.ref, run.o, func() {
				if p.st != nil {
					p.st.reset()
				}
				if p.reset != nil {
					p.reset()
				}
			})
			if p.st != nil && p.st.pkts == 0 {
				b.Fatalf("%s: no frames reached CPU %d (generated %d, received %d)", p.r.Ext.Name, run.remote, res.Total.Gen, res.Total.Received())
			}
			lost := res.LostFrac
			if p.lost != nil {
				lost = p.lost(res)
			}
			msg = p.verdict(b, res, lost)
			reportAttach(b, p.r, res)
			if p.st != nil {
				p.st.report(b, lost, res.Ns)
			}
		})
		say(b, row.name, msg)
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
		err = sched.Pinned(cpu, func() error { return serve(&stop) })
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
