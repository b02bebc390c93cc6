package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"bpfbench/bpf/host"
	"bpfbench/bpf/host/snapshot"
	"bpfbench/bpf/host/syslock"
	"bpfbench/bpf/labels"
	"bpfbench/bpf/measure"
	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/mark"
	"bpfbench/bpf/probe"
	"bpfbench/bpf/sched"
	"bpfbench/bpf/units"
)

// What each flag accepts, as its errors say.
var (
	wantCPU      = "want a CPU the process may run on (its affinity mask), or -1 for the last of them"
	wantCallTime = "want a duration from 100µs to 1s, such as 4ms"
	wantLockWait = "want a duration of 0 or more, such as 30s or 15m"
	wantResol    = "want a resolution in ns of 0 (off) or more, such as 0.1"
	wantBudget   = "want a duration of 1s or more, such as 60s"
	wantLayouts  = fmt.Sprintf("want a count from 1 to %d", maxLayouts)
)

var (
	flagCPU        = intFlag("bpfbench.cpu", -1, wantCPU, "`CPU` to pin the measuring thread to, -1 for the last online CPU")
	flagInterleave = boolFlag("bpfbench.interleave", true, "measure each variant and its baseline in alternating rounds and report delta-ns/op")
	flagCallTime   = durationFlag("bpfbench.calltime", 4*time.Millisecond, wantCallTime, "target `duration` of one test_run call (100µs to 1s)")
	flagLockWait   = durationFlag("bpfbench.lockwait", 30*time.Second, wantLockWait, "`duration` to wait for another bpfbench run to finish")
	flagResol      = newFlag("bpfbench.resolution", 0.0, func(s string) (float64, error) { return strconv.ParseFloat(strings.TrimSuffix(s, "ns"), 64) }, wantResol,
		"go on measuring a sub-benchmark past -benchtime until its paired difference's 95% half-width is at most this many `ns` (0: off)", false)
	flagBudget = durationFlag("bpfbench.budget", 60*time.Second, wantBudget, "with -bpfbench.resolution: the most `time` one sub-benchmark measures")
	flagDiag   = newFlag("bpfbench.diag", "", func(s string) (string, error) { return s, nil }, "want a file name",
		"append every row's diagnostics (clock rate, kernel's average, call cost, calls measured again, stolen time, losses) to this `file`, as benchmark lines", false)
	flagLayouts = intFlag("bpfbench.layouts", 16, wantLayouts, "`loads` of each measured program that the rounds take in turn, so that a figure does not depend on where one load's JIT image lies (1: one load; unset, 1 in an emulated guest)")
)

// layouts is how many loads of its programs a family measures: the value
// of -bpfbench.layouts when the command line gives it, else its default,
// or 1 in an emulated guest. There an instruction count (or the
// emulator's clock) does not depend on where the JIT put the code, so the
// other loads buy nothing but emulated loading and verifying.
func layouts() int {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "bpfbench.layouts" })
	if !set && probe.Emulated() {
		return 1
	}
	return *flagLayouts
}

// maxLayouts bounds -bpfbench.layouts: each is a load of a family's
// programs.
const maxLayouts = 64

// parsedFlag is a flag that rejects a malformed value saying what it
// accepts, where Go's own int, bool and duration flags say "parse error".
// parseFlags prints that one line instead of the usage of every flag of
// the test binary.
type parsedFlag[T any] struct {
	p      *T
	parse  func(string) (T, error)
	want   string
	isBool bool
}

func (f *parsedFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return errors.New(f.want)
	}
	*f.p = v
	return nil
}

func (f *parsedFlag[T]) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return fmt.Sprint(*f.p)
}

func (f *parsedFlag[T]) IsBoolFlag() bool { return f.isBool }

func newFlag[T any](name string, value T, parse func(string) (T, error), want, usage string, isBool bool) *T {
	p := new(T)
	*p = value
	flag.Var(&parsedFlag[T]{p: p, parse: parse, want: want, isBool: isBool}, name, usage)
	return p
}

func intFlag(name string, value int, want, usage string) *int {
	return newFlag(name, value, strconv.Atoi, want, usage, false)
}

func boolFlag(name string, value bool, usage string) *bool {
	return newFlag(name, value, strconv.ParseBool, "want true or false", usage, true)
}

func durationFlag(name string, value time.Duration, want, usage string) *time.Duration {
	return newFlag(name, value, time.ParseDuration, want, usage, false)
}

// parseFlags parses the command line, printing nothing: TestMain prints the
// error, in one line, or the usage for -h.
func parseFlags() error {
	fs := flag.CommandLine
	fs.Init(fs.Name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	err := fs.Parse(os.Args[1:])
	fs.SetOutput(nil)
	return err
}

// suiteLock is the system-wide lock TestMain holds for the whole run (nil
// when not root), which the tests hand to the runs they start. A scenario
// test lets it go while other runs it starts compete for it, as
// independent runs do, and then takes it back (withoutSuiteLock).
var suiteLock *syslock.Lock

func TestMain(m *testing.M) {
	if err := parseFlags(); errors.Is(err, flag.ErrHelp) {
		flag.Usage()
		os.Exit(0)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench:", err)
		os.Exit(2)
	}
	if err := validateFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench:", err)
		os.Exit(2)
	}
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	if !host.Privileged() {
		fmt.Fprintln(os.Stderr, "bpfbench:", host.ErrNotRoot)
		return m.Run()
	}
	lock, err := syslock.Take(*flagLockWait)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench:", err)
		return 1
	}
	suiteLock = lock
	defer func() { suiteLock.Release() }()
	journal.RestoreOnSignal()
	defer func() {
		if err := journal.RestoreAll(); err != nil {
			fmt.Fprintln(os.Stderr, "bpfbench: restore host state (the next run repairs what is left):", err)
			code = 1
		}
	}()

	repaired, err := journal.Repair()
	for _, line := range repaired {
		fmt.Fprintln(os.Stderr, "bpfbench: repaired:", line)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpfbench: repair what an earlier run left:", err)
		return 1
	}

	if benchmarking() {
		ls := append(labels.All(), xdpProgsLabel(), labels.Label{Key: "layouts", Value: strconv.Itoa(layouts())}, contentionRule)
		if err := labels.Write(os.Stdout, ls); err != nil {
			fmt.Fprintln(os.Stderr, "bpfbench:", err)
			return 1
		}
		for _, u := range units.Header(clocks().Icount) {
			fmt.Println(u)
		}
		for _, l := range ls {
			if l.Key == "bpf-stats-enabled" && l.Value != "0" {
				fmt.Fprintln(os.Stderr, "bpfbench: warning: kernel.bpf_stats_enabled is on: every run pays for stats; results say so in their labels")
			}
		}
	}
	code = m.Run()
	if benchmarking() {
		// After the results, in lines benchfmt passes over: what was
		// measured, what was skipped and why, what to read with care.
		record.WriteSummary(os.Stdout)
		if err := writeDiagnostics(*flagDiag); err != nil {
			fmt.Fprintln(os.Stderr, "bpfbench:", err)
			return 1
		}
	}
	return code
}

// contentionRule names the rule by which the run judged its calls
// contended: what its contended-frac means (docs/method.md#the-judge).
var contentionRule = labels.Label{Key: units.ContentionLabel, Value: units.ContentionRule}

// writeDiagnostics appends the run's diagnostics to path (nothing when
// path is empty), after the run's labels, so that the file reads as a
// results file of its own: benchstat and make compare ALL=1 read it.
func writeDiagnostics(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("diagnostics: %w", err)
	}
	ls := append(labels.All(), labels.Label{Key: "layouts", Value: strconv.Itoa(layouts())}, contentionRule)
	if err := labels.Write(f, ls); err != nil {
		f.Close()
		return fmt.Errorf("diagnostics: %w", err)
	}
	for _, u := range units.DiagHeader(clocks().Icount) {
		fmt.Fprintln(f, u)
	}
	if err := record.WriteDiagnostics(f); err != nil {
		f.Close()
		return fmt.Errorf("diagnostics: %w", err)
	}
	return f.Close()
}

// xdpProgsLabel counts the XDP programs loaded before the suite loaded
// any: attached ones share the dispatcher with the suite's, so the
// dispatcher family's occupancy levels are only what they say when it is 0.
func xdpProgsLabel() labels.Label {
	n, err := snapshot.CountXDPPrograms()
	if err != nil {
		return labels.Label{Key: "xdp-progs-at-start", Value: fmt.Sprintf("unknown (%v)", err)}
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "bpfbench: warning: %d XDP programs were loaded before this run; attached ones occupy the dispatcher\n", n)
	}
	return labels.Label{Key: "xdp-progs-at-start", Value: fmt.Sprint(n)}
}

// benchmarking reports whether -test.bench selects anything.
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// validateFlags checks the values parseFlags accepted, before anything on
// the system changes.
func validateFlags() error {
	allowed, err := sched.AllowedCPUs()
	if err != nil {
		return err
	}
	if _, err := sched.PickCPU(*flagCPU, allowed); err != nil {
		return fmt.Errorf("-bpfbench.cpu=%d: %w: %s", *flagCPU, err, wantCPU)
	}
	if *flagCallTime < 100*time.Microsecond || *flagCallTime > time.Second {
		return fmt.Errorf("-bpfbench.calltime=%v: %s", *flagCallTime, wantCallTime)
	}
	if *flagLockWait < 0 {
		return fmt.Errorf("-bpfbench.lockwait=%v: %s", *flagLockWait, wantLockWait)
	}
	if *flagResol < 0 || math.IsNaN(*flagResol) {
		return fmt.Errorf("-bpfbench.resolution=%v: %s", *flagResol, wantResol)
	}
	if *flagBudget < time.Second {
		return fmt.Errorf("-bpfbench.budget=%v: %s", *flagBudget, wantBudget)
	}
	if *flagLayouts < 1 || *flagLayouts > maxLayouts {
		return fmt.Errorf("-bpfbench.layouts=%d: %s", *flagLayouts, wantLayouts)
	}
	return validateAttachFlags()
}

// benchOptions are the measurement options every family uses.
func benchOptions() measure.BenchOptions {
	// validateFlags checked that the CPU is allowed.
	allowed, _ := sched.AllowedCPUs()
	cpu, _ := sched.PickCPU(*flagCPU, allowed)
	return measure.BenchOptions{CPU: cpu, CallTime: *flagCallTime, Interleave: *flagInterleave,
		Resolution: *flagResol, MaxTime: *flagBudget, Contention: contention, Clocks: clocks(), Emulated: probe.Emulated(),
		Record: record, Anatomy: anatomy}
}

// clocks says what the machine's clocks count, time or instructions
// (probe.Icount), for the engine and the figures the families report.
var clocks = sync.OnceValue(func() measure.Clocks {
	shift, ok := probe.Icount()
	return measure.Clocks{Icount: ok, Shift: shift}
})

// contention is the run's record of the measuring core's load, shared by
// every family: a contended state can outlast a family.
var contention = new(gauge.Contention)

// anatomy is the run's log of its windows, where the anatomy plugin
// counts the run (mark.Env names the log's file; nil elsewhere).
var anatomy = mark.FromEnv()

// journal is the run's journal of the host state it changes (sysctls),
// which TestMain restores at the end or on a signal, and which repairs
// what a killed run left.
var journal = host.NewJournal()

// record is the run's record of its rows (measure.Record): what became of
// each, why rows skipped, which to read with care, and their diagnostics,
// which TestMain writes after the results.
var record = new(measure.Record)

// failEnv names a point at which the suite fails on purpose, or with
// "block:" before it stops there until killed (see failpoint): how tests
// prove that a run failing or killed half-way leaves the machine as it
// found it, or that the next run repairs it.
const failEnv = "BPFBENCH_FAIL_AT"

// failpoint fails tb at point name when failEnv names it (failAt).
func failpoint(tb testing.TB, name string) {
	tb.Helper()
	if err := failAt(name); err != nil {
		tb.Fatal(err)
	}
}

// failAt is an error when failEnv names point name, and blocks forever,
// after saying so on stderr, when it names it after "block:".
func failAt(name string) error {
	switch os.Getenv(failEnv) {
	case name:
		return fmt.Errorf("failing on purpose at %s (%s)", name, failEnv)
	case "block:" + name:
		fmt.Fprintf(os.Stderr, "bpfbench: blocking at %s (%s) until killed\n", name, failEnv)
		for {
			time.Sleep(time.Hour)
		}
	}
	return nil
}
