// Package bench holds the bpfbench benchmark families. Run them as root:
//
//	go test -exec sudo -bench . ./bench
//
// The output is Go benchmark format: configuration lines that say which
// kernel, CPU and mitigations produced it, then one line per variant, named
// by /key=value pairs so benchstat can slice it.
package bench

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"bpfbench/bpf"

	"golang.org/x/sys/unix"
)

var (
	flagCPU        = flag.Int("bpfbench.cpu", -1, "CPU to pin the measuring thread to (default: the last online CPU)")
	flagInterleave = flag.Bool("bpfbench.interleave", true, "measure each variant and its baseline in alternating rounds and report delta-ns/op")
	flagCallTime   = flag.Duration("bpfbench.calltime", 4*time.Millisecond, "target duration of one test_run call (100µs to 1s)")
	flagLockWait   = flag.Duration("bpfbench.lockwait", 30*time.Second, "how long to wait for another bpfbench run to finish")
)

// errNotRoot is why privileged benchmarks and tests skip.
var errNotRoot = errors.New("bpfbench needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN): run `go test -exec sudo -bench . ./bench`")

// privileged is false when the process cannot load programs or create
// namespaces; every benchmark then skips with errNotRoot.
var privileged = unix.Geteuid() == 0

func TestMain(m *testing.M) {
	flag.Parse()
	if err := validateFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench:", err)
		os.Exit(2)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if !privileged {
		fmt.Fprintln(os.Stderr, "bpfbench:", errNotRoot)
		return m.Run()
	}
	unlock, err := bpf.Lock(*flagLockWait)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench:", err)
		return 1
	}
	defer unlock()
	bpf.InstallSignalHandler()
	defer bpf.RestoreAll()

	repaired, err := bpf.Repair()
	for _, line := range repaired {
		fmt.Fprintln(os.Stderr, "bpfbench: repaired:", line)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench: repair what an earlier run left:", err)
		return 1
	}

	if benchmarking() {
		labels := append(bpf.Labels(), xdpProgsLabel())
		if err := bpf.WriteLabels(os.Stdout, labels); err != nil {
			fmt.Fprintln(os.Stderr, "bpfbench:", err)
			return 1
		}
		for _, u := range bpf.Units {
			fmt.Println(u)
		}
		for _, l := range labels {
			if l.Key == "bpf-stats-enabled" && l.Value != "0" {
				fmt.Fprintln(os.Stderr, "bpfbench: warning: kernel.bpf_stats_enabled is on: every run pays for stats; results say so in their labels")
			}
		}
	}
	return m.Run()
}

// xdpProgsLabel counts the XDP programs loaded before the suite loaded
// any: attached ones share the dispatcher with the suite's, so the
// dispatcher family's occupancy levels are only what they say when it is 0.
func xdpProgsLabel() bpf.Label {
	n, err := bpf.CountXDPPrograms()
	if err != nil {
		return bpf.Label{Key: "xdp-progs-at-start", Value: fmt.Sprintf("unknown (%v)", err)}
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "bpfbench: warning: %d XDP programs were loaded before this run; attached ones occupy the dispatcher\n", n)
	}
	return bpf.Label{Key: "xdp-progs-at-start", Value: fmt.Sprint(n)}
}

// benchmarking reports whether -test.bench selects anything.
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

func validateFlags() error {
	if *flagCPU < -1 || *flagCPU >= runtime.NumCPU() {
		return fmt.Errorf("-bpfbench.cpu=%d: want a CPU from 0 to %d, or -1 for the last", *flagCPU, runtime.NumCPU()-1)
	}
	if *flagCallTime < 100*time.Microsecond || *flagCallTime > time.Second {
		return fmt.Errorf("-bpfbench.calltime=%v: want 100µs to 1s", *flagCallTime)
	}
	if *flagLockWait < 0 {
		return fmt.Errorf("-bpfbench.lockwait=%v: want a duration of 0 or more", *flagLockWait)
	}
	return nil
}

// benchOptions are the measurement options every family uses.
func benchOptions() bpf.BenchOptions {
	cpu := *flagCPU
	if cpu < 0 {
		cpu = runtime.NumCPU() - 1
	}
	return bpf.BenchOptions{CPU: cpu, CallTime: *flagCallTime, Interleave: *flagInterleave}
}

// failEnv names a point at which the suite fails on purpose (see
// failpoint): how tests prove that a run failing half-way leaves the
// machine as it found it.
const failEnv = "BPFBENCH_FAIL_AT"

// failpoint fails tb when failEnv names this point.
func failpoint(tb testing.TB, name string) {
	tb.Helper()
	if os.Getenv(failEnv) == name {
		tb.Fatalf("failing on purpose at %s (%s)", name, failEnv)
	}
}

// requireRoot skips tb with the command that would work.
func requireRoot(tb testing.TB) {
	tb.Helper()
	if !privileged {
		tb.Skip(errNotRoot)
	}
}
