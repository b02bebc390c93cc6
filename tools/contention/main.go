// Command contention measures which reference tracks a contended core:
// it times a SCHED_CLS drop program's test_run loop in short calls and, after every
// call, on the same thread, the references the suite could watch (the
// dependent multiplication chain, gauge.Read's spread loop and pointer
// chase over 64 KiB, and a chase over 8 MiB), and prints how each
// reference's time, over the chain's, correlates with the loop's cycles
// per run, and what the suite's judge (gauge.Contention.Judge) flags. With
// -load it makes contention itself: a thread on another CPU runs the
// spread loop (or, -load=memory, streams through 64 MiB) in periods on
// and off, which contends only where that CPU shares a core or a cache
// with the measuring one on the host. As root:
//
//	go run ./tools/contention [-duration 60s] [-load spread|memory] [-csv calls.csv]
//
// With -replay it measures nothing: it runs the suite's judge over a
// recorded trace (the -csv file, gzipped or not) and prints one line, the
// share of calls flagged and the kept and flagged calls' cycles per run:
//
//	go run ./tools/contention -replay calls.csv
//
// docs/method.md#contention says what the judge does and misses.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"bpfbench/bpf"
	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/sched"

	"github.com/aclements/go-moremath/stats"
)

func main() {
	cpu := flag.Int("cpu", runtime.NumCPU()-1, "`CPU` of the measuring thread")
	duration := flag.Duration("duration", 60*time.Second, "how long to measure")
	callTime := flag.Duration("calltime", 2*time.Millisecond, "length of one test_run call")
	load := flag.String("load", "", "contend from another CPU: spread (issue slots and ports) or memory (caches); empty: none")
	period := flag.Duration("period", 2*time.Second, "with -load: length of each on and off period")
	csv := flag.String("csv", "", "write every call's figures to this `file`")
	replay := flag.String("replay", "", "judge the calls recorded in this `file` (a -csv file), measure nothing")
	flag.Parse()
	if *replay != "" {
		t, err := readTrace(*replay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "contention:", err)
			os.Exit(1)
		}
		fmt.Println(t.summary(t.judge()))
		return
	}
	if err := run(*cpu, *duration, *callTime, *load, *period, *csv); err != nil {
		fmt.Fprintln(os.Stderr, "contention:", err)
		os.Exit(1)
	}
}

// A call is one test_run call and the references timed after it.
type call struct {
	on           bool    // the load was on
	xdpNs, cycle float64 // ns per run, cycle length
	refs         [3]float64
}

var refNames = [3]string{"spread loop (Load[Ports])", "pointer chase 64 KiB (Load[Caches])", "pointer chase 8 MiB"}

func run(cpu int, duration, callTime time.Duration, load string, period time.Duration, csvPath string) error {
	if load != "" && load != "spread" && load != "memory" {
		return fmt.Errorf("-load %q: want spread or memory", load)
	}
	// A SCHED_CLS drop: its test_run loop runs the program directly, where
	// an XDP program's outside the dispatcher rebuilds the dispatcher in
	// every call, a cost that would swamp the program's.
	objs := new(bpf.DispatcherObjects)
	if err := bpf.LoadDispatcherObjects(objs, nil); err != nil {
		return fmt.Errorf("load programs (as root): %w", err)
	}
	defer objs.Close()
	frame, err := bpf.UDPFrame(64)
	if err != nil {
		return err
	}
	big := gauge.NewChase(8<<20, 2)

	var on atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	if load != "" {
		other := (cpu + 1) % runtime.NumCPU()
		if other == cpu {
			return errors.New("-load needs a second CPU")
		}
		go contend(other, load, &on, period, stop)
	}

	var calls []call
	err = sched.Pinned(cpu, func() error {
		repeat := 100_000
		for start := time.Now(); time.Since(start) < duration; {
			t := sched.ThreadCPU()
			if _, _, err := objs.TcDrop.Benchmark(frame, repeat, nil); err != nil {
				return fmt.Errorf("test_run: %w", err)
			}
			took := sched.ThreadCPU() - t
			c := call{on: on.Load(), xdpNs: float64(took) / float64(repeat)}
			g := gauge.Read()
			chain := g.CycleNs * 24000 // the chain's 24,000 cycles, in ns
			c.cycle, c.refs[0], c.refs[1] = g.CycleNs, g.Load[gauge.Ports], g.Load[gauge.Caches]
			c.refs[2] = big.Time() / chain
			if g.CycleNs > 0 {
				calls = append(calls, c)
			}
			repeat = max(10_000, int(float64(callTime.Nanoseconds())/max(c.xdpNs, 0.1)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if csvPath != "" {
		if err := writeCSV(csvPath, calls); err != nil {
			return err
		}
	}
	report(calls, load != "")
	return nil
}

// contend runs the load on cpu in periods on and off until stop.
func contend(cpu int, load string, on *atomic.Bool, period time.Duration, stop chan struct{}) {
	buf := make([]uint64, 64<<20/8)
	sched.Pinned(cpu, func() error {
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			on.Store(!on.Load())
			end := time.Now().Add(period)
			for time.Now().Before(end) {
				if !on.Load() {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if load == "spread" {
					spread(1 << 16)
				} else {
					for i := 0; i < len(buf); i += 8 {
						buf[i]++
					}
				}
			}
		}
	})
}

// spread keeps the core's ports and caches busy with what the gauge runs.
func spread(n int) {
	for range n / 1024 {
		gauge.Read()
	}
}

func writeCSV(path string, calls []call) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "on,xdp_ns,cycle_ns,spread,chase64k,chase8m")
	for _, c := range calls {
		fmt.Fprintf(f, "%v,%.4f,%.5f,%.4f,%.4f,%.4f\n", c.on, c.xdpNs, c.cycle, c.refs[0], c.refs[1], c.refs[2])
	}
	return f.Close()
}

// report prints each reference's correlation with the loop's cycles per
// run, and how the suite's judge flags the slow calls: those more than
// 1.2 times the fastest tenth's median.
func report(calls []call, loaded bool) {
	if len(calls) < 10 {
		fmt.Println("too few calls")
		return
	}
	t := toTrace(calls)
	cyc := make([]float64, len(calls))
	for i, c := range t.calls {
		cyc[i] = c.Cost
	}
	fast := t.fastest()
	slow := t.slowCalls(1.2)
	nslow, _ := count(slow, slow)
	fmt.Printf("%d calls; tc drop %.2f cycles/run in the fastest tenth; %d calls (%.1f%%) over 1.2x that\n",
		len(calls), fast, nslow, 100*float64(nslow)/float64(len(calls)))
	if loaded {
		var onC, offC []float64
		for i, c := range calls {
			if c.on {
				onC = append(onC, cyc[i])
			} else {
				offC = append(offC, cyc[i])
			}
		}
		fmt.Printf("load on: median %.2f cycles/run over %d calls; off: %.2f over %d\n",
			stats.Sample{Xs: onC}.Quantile(0.5), len(onC), stats.Sample{Xs: offC}.Quantile(0.5), len(offC))
	}
	for r, name := range refNames {
		xs := make([]float64, len(calls))
		for i, c := range calls {
			xs[i] = c.refs[r]
		}
		fmt.Printf("%-36s correlation %+.2f; median %.3f\n", name, pearson(xs, cyc), stats.Sample{Xs: xs}.Quantile(0.5))
	}
	v := t.judge()
	flagged, hit := count(v.Contended, slow)
	fmt.Printf("the suite's judge flags %d calls, %d of them slow (of %d slow); references with a say: %s\n", flagged, hit, nslow, says(v))
	fmt.Println(t.summary(v))
}

// says names the references with a say in v.
func says(v gauge.Verdict) string {
	name := [...]string{gauge.Ports: refNames[0], gauge.Caches: refNames[1]}
	var s []string
	for k, ok := range v.Say {
		if ok {
			s = append(s, name[k])
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// toTrace is the calls as a trace, as if read from their -csv file.
func toTrace(calls []call) trace {
	var t trace
	for _, c := range calls {
		t.add(c.on, c.xdpNs/c.cycle, c.refs[0], c.refs[1])
	}
	return t
}

// count is how many calls are flagged, and how many of those are slow.
func count(flagged, slow []bool) (n, hit int) {
	for i, f := range flagged {
		if f {
			n++
			if slow[i] {
				hit++
			}
		}
	}
	return n, hit
}

// pearson is the correlation coefficient of xs and ys.
func pearson(xs, ys []float64) float64 {
	mx, my := stats.Mean(xs), stats.Mean(ys)
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	return sxy / math.Sqrt(sxx*syy)
}
