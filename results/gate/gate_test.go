package gate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/drift"
)

// read reads a committed results file of results/.
func read(t *testing.T, name string) *benchfile.File {
	t.Helper()
	f, err := benchfile.Read(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCountsRepeat: two instruction-count passes of one kernel differ by
// less than the default tolerance, and a path grown past it fails.
func TestCountsRepeat(t *testing.T) {
	a := read(t, "20261201T150053Z-qemu-icount-7.3.4+deb13-cloud-amd64-icount-a.txt")
	b := read(t, "20261201T150733Z-qemu-icount-7.3.4+deb13-cloud-amd64-icount-b.txt")
	r, err := Check(a, b, Options{Tolerance: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != Counts || r.Rows < 50 || !r.Passed() {
		t.Errorf("7.3 against itself: %s, %d rows, failures %v; want instruction counts, every row, none", r.Kind, r.Rows, r.Failures)
	}
	if r, _ := Check(a, b, Options{Tolerance: 0}); r.Passed() {
		t.Errorf("7.3 against itself with no tolerance passed: the rows that move by an instruction should fail")
	}
}

// TestAnatomyFexit: 7.3 returns from an fexit trampoline's call where
// 6.12 did not (calls - returns 1 -> 0): the gate fails naming the fexit
// rows, though their paths got shorter.
func TestAnatomyFexit(t *testing.T) {
	a := read(t, "20261204T192118Z-qemu-icount-6.12.118+deb13-cloud-amd64-anatomy.anatomy")
	b := read(t, "20261204T191813Z-qemu-icount-7.3.4+deb13-cloud-amd64-anatomy.anatomy")
	r, err := Check(a, b, Options{Tolerance: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != Anatomy || r.Passed() {
		t.Fatalf("6.12 against 7.3: %s, passed %v; want anatomy, failed", r.Kind, r.Passed())
	}
	var fexit bool
	for _, f := range r.Failures {
		if strings.Contains(f.Row, "attach=fexit") && f.Unit == "delta-calls-rets/op" && f.Rule == "mechanism" {
			fexit = true
		}
	}
	if !fexit {
		t.Errorf("6.12 against 7.3: no fexit row failed on calls - returns:\n%v", r.Failures)
	}
	if r, _ := Check(b, b, Options{Tolerance: -1}); !r.Passed() {
		t.Errorf("7.3's anatomy against itself: %v", r.Failures)
	}
	// A mechanism that went away fails too: a path that got shorter is
	// no excuse.
	if r, _ := Check(b, a, Options{Tolerance: -1}); r.Passed() {
		t.Errorf("7.3 against 6.12 passed: the fexit rows' calls - returns changed")
	}
}

// TestTimedNoise: two timed runs of one commit pass against the machine's
// A/A floor (from another pair); the same with rows made slower by 1.5
// times their floor fail, by half of it pass.
func TestTimedNoise(t *testing.T) {
	a := read(t, "aa/20261204T024139Z-vm-6.18.44-fc-v1252-aa1.txt")
	b := read(t, "aa/20261204T025931Z-vm-6.18.44-fc-v1252-aa2.txt")
	aa, ok := drift.FindAA(filepath.Join("..", "aa"), a)
	if !ok || aa[0].Path == a.Path {
		t.Fatalf("the floor's pair: %v, %v; want a newer pair than the files compared", aa[0], ok)
	}
	r, err := Check(a, b, Options{Tolerance: -1, AA: aa})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != Timed || r.Rows < 20 || !r.Passed() {
		t.Fatalf("an A/A pair: %s, %d rows, failures %v; want timed, passed", r.Kind, r.Rows, r.Failures)
	}
	floor, _ := drift.NewFloor(aa[0], aa[1], "cycles/op")
	slowed := []string{"BenchmarkCall/call=inline/hops=1", "BenchmarkDispatcher/dispatcher=k4/fill=generic/prog=xdp", "BenchmarkMitigations/prog=drop/stats=off/harden=0/spec=none"}
	for _, tc := range []struct {
		times float64
		fail  bool
	}{{1.5, true}, {0.5, false}} {
		c := slow(t, b, slowed, func(row string) float64 { return 1 + tc.times*floor.Of(row) })
		r, failed := failedRows(t, a, c, aa)
		if tc.fail && (len(failed) != len(slowed) || r.Passed()) {
			t.Errorf("rows slowed by %.1f times their floor: failed %v, want %v", tc.times, failed, slowed)
		}
		if !tc.fail && !r.Passed() {
			t.Errorf("rows slowed by %.1f times their floor: failed %v, want none", tc.times, failed)
		}
	}
	// Without an A/A pair, only a threshold gates: it says so.
	c := slow(t, b, slowed, func(string) float64 { return 1.08 })
	if r, _ := Check(a, c, Options{Tolerance: -1}); !r.Passed() || !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "no A/A pair") }) ||
		!slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, "no threshold") }) {
		t.Errorf("no A/A pair, no threshold: passed %v, notes %q; want passed, saying both", r.Passed(), r.Notes)
	}
	if r, _ := Check(a, c, Options{Tolerance: -1, FailPct: 5}); len(r.Failures) != len(slowed) {
		t.Errorf("no A/A pair, -fail-on 5%% on rows 8%% slower: failures %v", r.Failures)
	}
}

// TestSharedShift: every row of a run of the commit made slower together
// fails the gate as one, "(every row)", once the shared shift lies past
// what the machine's A/A pair allows one (Floor.Shared), and passes within it.
func TestSharedShift(t *testing.T) {
	a := read(t, "aa/20261204T024139Z-vm-6.18.44-fc-v1252-aa1.txt")
	b := read(t, "aa/20261204T025931Z-vm-6.18.44-fc-v1252-aa2.txt")
	aa, ok := drift.FindAA(filepath.Join("..", "aa"), a)
	if !ok {
		t.Fatal("no A/A pair for the files compared")
	}
	floor, _ := drift.NewFloor(aa[0], aa[1], "cycles/op")
	if floor.Shared() < floor.Machine || floor.Shared() < math.Abs(floor.Shift) {
		t.Fatalf("the pair's shared-shift floor %.4f, below its floor %.4f or its own shift %+.4f", floor.Shared(), floor.Machine, floor.Shift)
	}
	own, _ := drift.Compare(a, b, "cycles/op", nil)
	for _, tc := range []struct {
		times float64
		fail  bool
	}{{3, true}, {0.3, false}} {
		// Every row of b by as much again as takes the shift to times
		// the floor.
		by := (1 + tc.times*floor.Shared()) / (1 + own.Median)
		c := slow(t, b, a.Names, func(string) float64 { return by })
		_, failed := failedRows(t, a, c, aa)
		if tc.fail && !slices.Equal(failed, []string{"(every row)"}) {
			t.Errorf("every row at a shift %.1f times the pair's %.4f: failed %v, want (every row) alone", tc.times, floor.Shared(), failed)
		}
		if !tc.fail && len(failed) > 0 {
			t.Errorf("every row at a shift %.1f times the pair's %.4f: failed %v, want none", tc.times, floor.Shared(), failed)
		}
	}
}

// failedRows is the gate's result for b against a, held to the pair aa,
// and the rows it failed.
func failedRows(t *testing.T, a, b *benchfile.File, aa [2]*benchfile.File) (Result, []string) {
	t.Helper()
	r, err := Check(a, b, Options{Tolerance: -1, AA: aa})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range r.Failures {
		failed = append(failed, f.Row)
	}
	return r, failed
}

// slow is f with the cycles/op and ns/op of rows multiplied by by(row),
// written and read again as a results file.
func slow(t *testing.T, f *benchfile.File, rows []string, by func(row string) float64) *benchfile.File {
	t.Helper()
	data, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		fields := strings.Fields(l)
		if len(fields) < 4 {
			continue
		}
		for _, row := range rows {
			if benchfile.ParseName(fields[0]).String() != row {
				continue
			}
			for j := 3; j < len(fields); j += 2 {
				if fields[j] != "cycles/op" && fields[j] != "ns/op" {
					continue
				}
				var v float64
				if _, err := fmt.Sscan(fields[j-1], &v); err != nil {
					t.Fatal(err)
				}
				fields[j-1] = fmt.Sprint(v * by(row))
			}
			lines[i] = strings.Join(fields, "\t")
		}
	}
	path := filepath.Join(t.TempDir(), filepath.Base(f.Path))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := benchfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestParseThreshold: a percentage or ns per op, nothing else.
func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		s       string
		pct, ns float64
		ok      bool
	}{{"5%", 5, 0, true}, {"2ns", 0, 2, true}, {"0.5ns", 0, 0.5, true}, {"5", 0, 0, false}, {"-1%", 0, 0, false}, {"x%", 0, 0, false}, {"Infns", 0, 0, false}} {
		pct, ns, err := ParseThreshold(tc.s)
		if (err == nil) != tc.ok || pct != tc.pct || ns != tc.ns {
			t.Errorf("ParseThreshold(%q) = %v, %v, %v", tc.s, pct, ns, err)
		}
	}
}

// TestMechanismAgainstBaseline: a row with a baseline is held by what its
// variant adds over it, so an event its variant and baseline share (one
// run's driver made an extra call in both) does not fail the gate; a row
// without a baseline is held by its own count.
func TestMechanismAgainstBaseline(t *testing.T) {
	anatomy := func(shared float64) *benchfile.File {
		f := &benchfile.File{Path: "x.anatomy", Config: map[string]string{"anatomy": "qemu-tcg-plugin", "virt": "tcg-icount"}, Runs: map[string][]benchfile.Run{}}
		for name, vals := range map[string]map[string]float64{
			"BenchmarkT/attach=none": {"instrs/op": 26, "calls-rets/op": shared},
			"BenchmarkT/attach=hook": {"instrs/op": 320 + shared, "calls-rets/op": shared, "delta-calls-rets/op": 0},
		} {
			f.Names = append(f.Names, name)
			f.Runs[name] = []benchfile.Run{{Name: benchfile.ParseName(name), Values: vals}}
		}
		return f
	}
	r, err := Check(anatomy(1), anatomy(0), Options{Tolerance: 2})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, f := range r.Failures {
		rows = append(rows, f.Row+" "+f.Unit)
	}
	if len(rows) != 1 || rows[0] != "BenchmarkT/attach=none calls-rets/op" {
		t.Errorf("failures %v: want the baseline row's own calls-rets only", rows)
	}
}
