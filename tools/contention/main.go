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
// With -loadonly it measures nothing and is the neighbour alone, on the
// CPU after -cpu, -on and -off at a time, for another run beside it:
//
//	go run ./tools/contention -loadonly -load memory -on 20s -off 40s -duration 30m
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
	onTime := flag.Duration("on", 0, "with -load: length of each on period (default -period)")
	offTime := flag.Duration("off", 0, "with -load: length of each off period (default -period)")
	loadOnly := flag.Bool("loadonly", false, "with -load: be the neighbour for -duration and measure nothing (a neighbour for another run)")
	csv := flag.String("csv", "", "write every call's figures to this `file`")
	replay := flag.String("replay", "", "judge the calls recorded in this `file` (a -csv file), measure nothing")
	flag.Parse()
	if *onTime == 0 {
		*onTime = *period
	}
	if *offTime == 0 {
		*offTime = *period
	}
	if *replay != "" {
		t, err := readTrace(*replay)
		if err != nil {
			fmt.Fprintln(os.Stderr, "contention:", err)
			os.Exit(1)
		}
		fmt.Println(t.summary(t.judge()))
		return
	}
	if *loadOnly {
		if *load == "" {
			fmt.Fprintln(os.Stderr, "contention: -loadonly needs -load")
			os.Exit(2)
		}
		if err := neighbour(*cpu, *load, *onTime, *offTime, *duration); err != nil {
			fmt.Fprintln(os.Stderr, "contention:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*cpu, *duration, *callTime, *load, [2]time.Duration{*onTime, *offTime}, *csv); err != nil {
		fmt.Fprintln(os.Stderr, "contention:", err)
		os.Exit(1)
	}
}

// A call is one test_run call and the references timed after it.
type call struct {
	on           bool    // the load was on
	xdpNs, cycle float64 // ns per run, cycle length
	load         gauge.Load
}

// refNames is what the report calls each reference.
var refNames = [gauge.Refs]string{
	gauge.Ports:  "spread loop (Load[Ports])",
	gauge.Caches: "pointer chase 64 KiB (Load[Caches])",
	gauge.Memory: "pointer chase 8 MiB (Load[Memory])",
}

func run(cpu int, duration, callTime time.Duration, load string, period [2]time.Duration, csvPath string) error {
	if err := checkLoad(load); err != nil {
		return err
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
	var on atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	if load != "" {
		other, err := otherCPU(cpu)
		if err != nil {
			return err
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
			c.cycle, c.load = g.CycleNs, g.Load
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

// checkLoad says whether load names a load contend can make.
func checkLoad(load string) error {
	if load != "" && load != "spread" && load != "memory" {
		return fmt.Errorf("-load %q: want spread or memory", load)
	}
	return nil
}

// otherCPU is the CPU after cpu, where the load runs.
func otherCPU(cpu int) (int, error) {
	other := (cpu + 1) % runtime.NumCPU()
	if other == cpu {
		return 0, errors.New("-load needs a second CPU")
	}
	return other, nil
}

// neighbour is the load alone, on the CPU after cpu, for duration: period
// on and off, starting on, as a neighbour of a run measuring meanwhile.
func neighbour(cpu int, load string, on, off, duration time.Duration) error {
	if err := checkLoad(load); err != nil {
		return err
	}
	other, err := otherCPU(cpu)
	if err != nil {
		return err
	}
	var state atomic.Bool
	stop := make(chan struct{})
	time.AfterFunc(duration, func() { close(stop) })
	fmt.Printf("%s load on CPU %d: %v on, %v off, for %v\n", load, other, on, off, duration)
	contend(other, load, &state, [2]time.Duration{on, off}, stop)
	return nil
}

// contend runs the load on cpu in periods on (period[0]) and off
// (period[1]) until stop.
func contend(cpu int, load string, on *atomic.Bool, period [2]time.Duration, stop chan struct{}) {
	buf := make([]uint64, 64<<20/8)
	sched.Pinned(cpu, func() error {
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			on.Store(!on.Load())
			length := period[1]
			if on.Load() {
				length = period[0]
			}
			end := time.Now().Add(length)
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
	fmt.Fprintf(f, "on,xdp_ns,cycle_ns,%s\n", strings.Join(gauge.RefNames[:], ","))
	for _, c := range calls {
		fmt.Fprintf(f, "%v,%.4f,%.5f", c.on, c.xdpNs, c.cycle)
		for _, v := range c.load {
			fmt.Fprintf(f, ",%.4f", v)
		}
		fmt.Fprintln(f)
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
			xs[i] = c.load[r]
		}
		fmt.Printf("%-36s correlation %+.2f; median %.3f\n", name, pearson(xs, cyc), stats.Sample{Xs: xs}.Quantile(0.5))
	}
	v := t.judge()
	flagged, hit := count(v.Contended, slow)
	fmt.Printf("the suite's judge flags %d calls, %d of them slow (of %d slow); references with a say: %s\n", flagged, hit, nslow, says(v))
	fmt.Println(t.summary(v))
}

// says names the references with a say in v.
func says(v gauge.Decision) string {
	var s []string
	for k, ok := range v.Say {
		if ok {
			s = append(s, refNames[k])
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
		t.add(c.on, c.xdpNs/c.cycle, c.load)
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
