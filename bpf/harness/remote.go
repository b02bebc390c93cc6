package harness

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"bpfbench/bpf/host"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/rig"
	"bpfbench/bpf/sched"
)

// The skeleton of the families whose path ends on a second CPU (AFXDP,
// Cpumap, UDP), after the kernel selftests' bench.c: the harness is
// written once (Remote.Bench), and a family is its setup and a table
// of rows, each a value (RemoteRow).

// A Remote is one run of such a family: its options, the CPU its
// remote stage runs on, and the attach rig.
type Remote struct {
	// O are the run's options; CPU is the other CPU, where the remote
	// stage runs; T is the attach rig.
	O   measure.BenchOptions
	CPU int
	T   *rig.Traffic
}

// NewRemote starts a family whose path ends on a second CPU: root, the
// options, the CPU the remote stage runs on (or a skip naming what needs
// it), and the attach rig.
func NewRemote(b *testing.B, o measure.BenchOptions, needs string) *Remote {
	b.Helper()
	host.RequireRoot(b)
	allowed, _ := sched.AllowedCPUs()
	remote := OtherCPU(o.CPU, allowed)
	if remote < 0 {
		why := ""
		if o.Clocks.Icount {
			why = " (an instruction-counting guest has one vCPU: with two, one's work lands in the other's counts)"
		}
		o.Record.Skipf(b, "%s needs two CPUs: %s runs on the one the generator does not use%s", b.Name(), needs, why)
	}
	t, err := rig.NewTraffic(2)
	o.Record.Require(b, err, "traffic rig")
	b.Cleanup(func() {
		if err := t.Close(); err != nil {
			b.Error(err)
		}
	})
	return &Remote{O: o, CPU: remote, T: t}
}

// A RemoteRow is one row of such a family: a receiver that does the
// family's work in XDP alone (kernel: the family's baseline row), or a
// path to the other CPU that start sets up in the row's sub-benchmark.
type RemoteRow struct {
	Name   string
	Kernel *rig.Receiver
	Start  func(b *testing.B) RemotePath
}

// A RemotePath is what a row's start sets up: the receiver that takes
// the generator's frames, the in-kernel row it is measured against (nil:
// none), the stage that meters the other CPU (nil: none, the frames end
// in the kernel), and the row's own part of the result.
type RemotePath struct {
	R     rig.Receiver
	Ref   *rig.Receiver
	Stage *Stage
	Reset func() // after the warm-up, beside the stage's
	// Lost is the share of frames lost on the way to the stage (nil:
	// the rig's LostFrac).
	Lost func(res rig.TrafficResult) float64
	// Words checks what only this row knows and returns its words for
	// stderr (Say) and its own figures; it may skip the row.
	Words func(b *testing.B, res rig.TrafficResult, lost float64) (string, []measure.Figure)
}

// Bench measures every row as a sub-benchmark of b, through the engine's
// one entry (measure.Family, a Start row each): the path set up, the rig
// measured (rig.Traffic.Job), the rig's and the stage's metrics
// reported, the row's verdict said.
func (run *Remote) Bench(b *testing.B, rows []RemoteRow) {
	b.Helper()
	var table []measure.Row
	for _, row := range rows {
		// say makes a job report what words says of its traffic, and
		// its figures.
		say := func(w measure.Job, summary func(measure.Result) rig.TrafficResult, words func(b *testing.B, res rig.TrafficResult) (string, []measure.Figure)) measure.Job {
			w.Report = func(b *testing.B, m measure.Result) []measure.Figure {
				msg, figs := words(b, summary(m))
				Say(b, run.O.Record, "", msg)
				return figs
			}
			return w
		}
		table = append(table, measure.Row{
			Name: row.Name,
			Start: func(b *testing.B) measure.Job {
				if row.Kernel != nil {
					w, summary := run.T.Job(*row.Kernel, nil, run.O.Interleave, nil)
					return say(w, summary, func(b *testing.B, res rig.TrafficResult) (string, []measure.Figure) {
						return TrafficWords(*row.Kernel, res), res.Figures(*row.Kernel)
					})
				}
				p := row.Start(b)
				w, summary := run.T.Job(p.R, p.Ref, run.O.Interleave, func() {
					if p.Stage != nil {
						p.Stage.Reset()
					}
					if p.Reset != nil {
						p.Reset()
					}
				})
				return say(w, summary, func(b *testing.B, res rig.TrafficResult) (string, []measure.Figure) {
					if p.Stage != nil && p.Stage.Pkts == 0 {
						b.Fatalf("%s: no frames reached CPU %d (generated %d, received %d)", p.R.Ext.Name, run.CPU, res.Total.Gen, res.Total.Received())
					}
					lost := res.LostFrac
					if p.Lost != nil {
						lost = p.Lost(res)
					}
					msg, figs := p.Words(b, res, lost)
					figs = append(figs, res.Figures(p.R)...)
					if p.Stage != nil {
						figs = append(figs, p.Stage.Figures(lost, res.Ns)...)
					}
					return msg, figs
				})
			},
		})
	}
	measure.Family(b, run.O, table)
}

// ServeOn runs serve on a thread pinned to cpu until stop, and waits until
// tid (which serve sets) says the thread started: the remote stage of
// AFXDP's application and UDP's receiver. stop stops serve, waits for it
// and returns its error.
func ServeOn(cpu int, what string, tid *atomic.Int32, serve func(stop *atomic.Bool) error) (stop func() error, err error) {
	var halt atomic.Bool
	var serveErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		serveErr = sched.Pinned(cpu, func() error { return serve(&halt) })
	}()
	stop = func() error {
		halt.Store(true)
		<-done
		if serveErr != nil {
			return fmt.Errorf("%s on CPU %d: %w", what, cpu, serveErr)
		}
		return nil
	}
	// The thread starts once the remote CPU runs it, which a loaded CPU
	// may delay by seconds; a serve that failed ends the wait at once.
	for deadline := time.Now().Add(30 * time.Second); tid.Load() == 0; time.Sleep(100 * time.Microsecond) {
		select {
		case <-done:
			return nil, errors.Join(fmt.Errorf("%s ended before it started on CPU %d", what, cpu), stop())
		default:
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("%s did not start on CPU %d", what, cpu), stop())
		}
	}
	return stop, nil
}

// OtherCPU is a CPU other than cpu for a remote stage: of allowed (the
// process's affinity mask, sched.AllowedCPUs), the highest one below cpu,
// wrapping; -1 when allowed has no other.
func OtherCPU(cpu int, allowed []int) int {
	i := slices.Index(allowed, cpu)
	if i < 0 || len(allowed) < 2 {
		return -1
	}
	return allowed[(i+len(allowed)-1)%len(allowed)]
}
