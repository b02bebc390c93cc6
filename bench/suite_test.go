package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"bpfbench/bpf/host"
	"bpfbench/bpf/host/snapshot"
	"bpfbench/bpf/probe"
	"bpfbench/internal/child"
	"bpfbench/results/benchfile"

	"golang.org/x/perf/benchfmt"
)

// runSuite runs this test binary again as a child, as a user would run the
// suite, handing it the bpfbench lock this process holds.
func runSuite(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := suiteCmd("", env, true, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// suiteCmd is the command of a run of the suite as a child
// (child.Command, suiteOptions) that the caller runs itself: the test
// binary bin (this one when ""), with env, and, with lock, the bpfbench
// lock this process holds handed to the child.
func suiteCmd(bin string, env []string, lock bool, args ...string) *exec.Cmd {
	o := child.Options{Bin: bin, Env: env, Args: args}
	if lock {
		o.Lock = suiteLock.File()
	}
	return child.Command(suiteOptions(o))
}

// requireLiveFrames skips a test of a family built on the veth rig where
// the family itself skips: the kernel has no live-frames test_run (< 5.18).
func requireLiveFrames(t *testing.T) {
	t.Helper()
	probe.Require(t, probe.HaveLiveFrames(), "traffic generator")
}

// takeSnapshot takes the state to compare with after a run, once programs and
// links freed by earlier tests are gone.
func takeSnapshot(t *testing.T) snapshot.State {
	t.Helper()
	s, err := snapshot.Settled(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// requireSameState fails unless the machine returns to before. Programs
// and links are freed when their last descriptor closes, which for an
// exited child can take a moment.
func requireSameState(t *testing.T, before snapshot.State) {
	t.Helper()
	var diff string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		now, err := snapshot.Take()
		if err != nil {
			t.Fatal(err)
		}
		if diff = before.Diff(now); diff == "" {
			return
		}
	}
	t.Fatalf("the run left the machine changed: %s", diff)
}

// readResults reads the suite's output as benchstat does, failing t on
// every line benchfmt calls malformed.
func readResults(t *testing.T, out string) ([]*benchfmt.Result, benchfmt.UnitMetadataMap) {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(out), "suite")
	var results []*benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		case *benchfmt.SyntaxError:
			t.Errorf("benchfmt: %v", rec)
		}
	}
	return results, r.Units()
}

// TestOutputParses runs a benchmark as a user would and reads its output
// with benchfmt, as benchstat does: the configuration lines and the
// /key=value names must be there.
func TestOutputParses(t *testing.T) {
	host.RequireRoot(t)
	diagPath := filepath.Join(t.TempDir(), "run.diag")
	stdout, stderr, err := runSuite(t, nil, "-test.run=^$", "-test.bench=^BenchmarkXDP$/^prog=(drop|parse)$/^size=64$", "-test.benchtime=100x", "-bpfbench.diag="+diagPath)
	if err != nil {
		t.Fatalf("suite failed: %v\n%s\n%s", err, stdout, stderr)
	}
	results, units := readResults(t, stdout)
	if len(results) != 2 {
		t.Fatalf("got %d results, want 2:\n%s", len(results), stdout)
	}
	for _, key := range []string{
		"kernel", "cpu-vendor", "virt", "mitigations", "spectre-v2", "retbleed",
		"spec-rstack-overflow", "retpoline", "ibt", "cfi", "bpf-jit-enable",
		"bpf-jit-harden", "bpf-stats-enabled", "preempt", "commit", "runstamp",
		"xdp-progs-at-start", "layouts",
	} {
		if results[0].GetConfig(key) == "" {
			t.Errorf("configuration line %q missing", key)
		}
	}
	// Without the flag: sixteen loads, one in an emulated guest.
	if want := map[bool]string{false: "16", true: "1"}[probe.Emulated()]; results[0].GetConfig("layouts") != want {
		t.Errorf("layouts: %q, want %s (emulated: %v)", results[0].GetConfig("layouts"), want, probe.Emulated())
	}
	base, parse := results[0], results[1]
	for i, want := range []string{"XDP/prog=drop/size=64", "XDP/prog=parse/size=64"} {
		// Full names end in -GOMAXPROCS, which benchfmt parses as a part.
		if got := string(results[i].Name.Full()); !strings.HasPrefix(got, want+"-") {
			t.Errorf("result %d is %q, want %s-<procs>", i, got, want)
		}
	}
	if _, parts := parse.Name.Parts(); len(parts) < 2 || string(parts[0]) != "/prog=parse" || string(parts[1]) != "/size=64" {
		t.Errorf("benchfmt splits the name into %q", parts)
	}
	// The line carries what compares; the diagnostics go to their file.
	for _, unit := range []string{"sec/op", "delta-sec/op"} {
		if _, ok := parse.Value(unit); !ok {
			t.Errorf("parse result lacks %s", unit)
		}
	}
	diag := readDiagnostics(t, diagPath)
	for _, unit := range []string{"kernel-sec/op", "call-us", "remeasured", "clock-disagree", "delta-rel"} {
		if _, ok := parse.Value(unit); ok {
			t.Errorf("parse result carries the diagnostic %s", unit)
		}
		if d := diag["XDP/prog=parse/size=64"]; d == nil {
			t.Fatalf("no diagnostics of XDP/prog=parse/size=64 in %s: %v", diagPath, diag)
		} else if _, ok := d.Value(unit); !ok {
			t.Errorf("parse's diagnostics lack %s", unit)
		}
	}
	if _, ok := base.Value("delta-sec/op"); ok {
		t.Error("the baseline reports a delta against itself")
	}
	// Cycles where the suite times its multiplication chain on a CPU
	// that keeps time (amd64, not emulated), with the clock rate among
	// the diagnostics, and the contended share; none where the cycles
	// would be nobody's.
	_, cycles := parse.Value("cycles/op")
	_, contended := parse.Value("contended-frac")
	_, ghz := diag["XDP/prog=parse/size=64"].Value("core-ghz")
	memory, haveMemory := diag["XDP/prog=parse/size=64"].Value("memory-load")
	if want := runtime.GOARCH == "amd64" && !probe.Emulated(); cycles != want || ghz != want || contended != want || haveMemory != want {
		t.Errorf("cycles/op reported %v, core-ghz %v, contended-frac %v, memory-load %v: want %v (emulated: %v)", cycles, ghz, contended, haveMemory, want, probe.Emulated())
	}
	// The memory reference is a time over the chain's: positive.
	if haveMemory && !(memory > 0) {
		t.Errorf("memory-load %v, want a positive ratio", memory)
	}
	if u := units[benchfmt.UnitMetadataKey{Unit: "delta-sec/op", Key: "better"}]; u == nil || u.Value != "lower" {
		t.Errorf("no Unit line says delta-ns/op is better lower")
	}
}

// familyRun is a benchmark family run as a user runs it, read as benchstat
// reads it.
type familyRun struct {
	results map[string]*benchfmt.Result // by name, without -<procs>
	order   []string
	units   benchfmt.UnitMetadataMap
	skips   map[string]string           // sub-benchmark name: reason
	diag    map[string]*benchfmt.Result // -bpfbench.diag's lines, by name
	stdout  string
	stderr  string
}

// requireUnits fails unless result name reports every unit.
func (f familyRun) requireUnits(t *testing.T, name string, units ...string) {
	t.Helper()
	res := f.results[name]
	if res == nil {
		t.Errorf("no result %s (have %q; skipped: %v)", name, f.order, f.skips)
		return
	}
	for _, u := range units {
		_, ok := res.Value(u)
		if d := f.diag[name]; !ok && d != nil {
			_, ok = d.Value(u)
		}
		if !ok {
			t.Errorf("%s lacks %s, on its line and in its diagnostics", name, u)
		}
	}
}

// value is row name's value of unit, on its line or among its
// diagnostics.
func (f familyRun) value(name, unit string) (float64, bool) {
	if r := f.results[name]; r != nil {
		if v, ok := r.Value(unit); ok {
			return v, true
		}
	}
	if d := f.diag[name]; d != nil {
		return d.Value(unit)
	}
	return 0, false
}

// readDiagnostics reads a -bpfbench.diag file as benchstat would, by
// name without "Benchmark" (as familyRun's results).
func readDiagnostics(t *testing.T, path string) map[string]*benchfmt.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("diagnostics: %v", err)
	}
	results, _ := readResults(t, string(data))
	out := map[string]*benchfmt.Result{}
	for _, r := range results {
		out[strings.TrimPrefix(string(r.Name.Full()), "Benchmark")] = r
	}
	return out
}

// runFamily runs the benchmarks bench selects briefly (-benchtime 100x,
// verbose so that skips say why) and parses the output.
func runFamily(t *testing.T, bench string) familyRun {
	t.Helper()
	return runVerbose(t, nil, "-test.run=^$", "-test.bench="+bench, "-test.benchtime=100x")
}

// runVerbose runs the suite with args as runSuite does, verbose and
// writing its diagnostics, and parses the output.
func runVerbose(t *testing.T, env []string, args ...string) familyRun {
	t.Helper()
	diagPath := filepath.Join(t.TempDir(), "run.diag")
	stdout, stderr, err := runSuite(t, env, append(args, "-test.v", "-bpfbench.diag="+diagPath)...)
	if err != nil {
		t.Fatalf("suite failed: %v\n%s\n%s", err, stdout, stderr)
	}
	run := familyRun{results: map[string]*benchfmt.Result{}, skips: map[string]string{}, stdout: stdout, stderr: stderr,
		diag: readDiagnostics(t, diagPath)}
	// The skip reasons, as the report reads them (benchfile).
	file, err := benchfile.Parse("suite", []byte(stdout))
	if err != nil {
		t.Fatalf("read the suite's output: %v", err)
	}
	for name, whys := range file.Skipped {
		run.skips[strings.TrimPrefix(name, "Benchmark")] = strings.Join(whys, "; ")
	}
	// -test.v adds "=== RUN" lines and a line with each benchmark's bare
	// name, which benchfmt would call malformed.
	var keep []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "Benchmark") && !strings.ContainsAny(l, " \t") {
			continue
		}
		keep = append(keep, l)
	}
	var results []*benchfmt.Result
	results, run.units = readResults(t, strings.Join(keep, "\n"))
	for _, rec := range results {
		name := string(rec.Name.Full())
		name = name[:strings.LastIndex(name, "-")]
		run.results[name] = rec
		run.order = append(run.order, name)
	}
	requireNoConfigLines(t, stderr)
	return run
}

// requireNoConfigLines fails if the family's stderr has a line benchfmt
// reads as a configuration line: go test merges stderr into stdout, so it
// would relabel every result after it. (TestMain's own warnings and repair
// notes are left out: they come before any result.)
func requireNoConfigLines(t *testing.T, stderr string) {
	t.Helper()
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "bpfbench: warning: ") && !strings.HasPrefix(l, "bpfbench: repaired: ") {
			keep = append(keep, l)
		}
	}
	r := benchfmt.NewReader(strings.NewReader(strings.Join(keep, "\n")+"\nBenchmarkProbe 1 1 ns/op\n"), "stderr")
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok && len(res.Config) > 0 {
			for _, c := range res.Config {
				t.Errorf("stderr line reads as configuration %q: %q", c.Key, c.Value)
			}
		}
	}
}

// TestRunSummary: a run ends with a summary that benchfmt passes over,
// counting the rows measured, and naming every skipped row (as -v shows
// them) under its reason. Where tracing programs load, nothing skips and
// the summary says so; where they are refused, it names those rows.
func TestRunSummary(t *testing.T) {
	host.RequireRoot(t)
	run := runFamily(t, "^BenchmarkTrampoline$/^target=xdp$/^attach=(none|fentry)$/^progs=(0|1)$")
	stdout := run.stdout
	i := strings.Index(stdout, "# bpfbench summary: ")
	if i < 0 {
		t.Fatalf("no summary in the output:\n%s", stdout)
	}
	summary := stdout[i:]
	want := fmt.Sprintf("# bpfbench summary: %d rows measured, %d skipped, 0 failed", len(run.results), len(run.skips))
	if !strings.HasPrefix(summary, want) {
		t.Errorf("summary starts %q, want %q", strings.SplitN(summary, "\n", 2)[0], want)
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(summary, "\n") {
		if rest, ok := strings.CutPrefix(l, "#     "); ok {
			for _, tok := range strings.Fields(rest) {
				listed[tok] = true
			}
		}
	}
	for name, why := range run.skips {
		short := name[strings.Index(name, "/")+1:]
		if !listed[short] && !listed["Benchmark"+name] {
			t.Errorf("skipped row %s (%s) is not in the summary:\n%s", name, why, summary)
		}
	}
	if len(run.results)+len(run.skips) == 0 {
		t.Fatal("the filter selected no row: the test tests nothing")
	}
}
