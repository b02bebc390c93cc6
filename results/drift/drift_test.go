package drift

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/internal/resultstest"
)

// The shared part of a move is measured and taken out: benchstat's test
// calls nearly every row different, and once B is divided by the shared
// shift only the row that moved by itself is left.
func TestDrift(t *testing.T) {
	pa, pb := resultstest.DriftFiles(t)
	a, err := benchfile.Read(pa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := benchfile.Read(pb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		unit  string
		shift float64
	}{{"cycles/op", 0.01}, {"ns/op", -0.04}} {
		s, ok := Compare(a, b, c.unit, nil)
		if !ok {
			t.Fatalf("%s: no rows in common", c.unit)
		}
		if s.Rows != 20 {
			t.Errorf("%s: %d rows, want 20", c.unit, s.Rows)
		}
		if math.Abs(s.Median-c.shift) > 0.003 || !(s.Lo <= s.Median && s.Median <= s.Hi) {
			t.Errorf("%s: shared shift %+.4f [%+.4f, %+.4f], want about %+.2f inside its interval", c.unit, s.Median, s.Lo, s.Hi, c.shift)
		}
		if s.Different < 18 {
			t.Errorf("%s: %d rows different as they stand, want nearly all 20", c.unit, s.Different)
		}
		// The other 19 rows moved by the shared shift alone: the test
		// calls ~5% of them different by chance (one), not a quarter.
		if !slices.ContainsFunc(s.Beyond, func(m RowMove) bool { return m.Name == "BenchmarkX/row=r7" }) || len(s.Beyond) > 4 {
			t.Errorf("%s: beyond the shared shift: %v, want BenchmarkX/row=r7 and at most 3 others", c.unit, s.Beyond)
		}
		if s.Largest.Name != "BenchmarkX/row=r7" || math.Abs(s.Largest.Move-0.10) > 0.01 {
			t.Errorf("%s: furthest from the shift: %+v, want r7 at about +10%%", c.unit, s.Largest)
		}
	}
	if _, ok := Compare(a, b, "instrs/op", nil); ok {
		t.Error("instrs/op: rows in common, but neither file has the unit")
	}
	var out bytes.Buffer
	Report(&out, a, b, [2]*benchfile.File{}, AllUnits)
	for _, want := range []string{"cycles/op: 20 rows; shared shift +1.", "ns/op: 20 rows; shared shift -", "furthest from it: BenchmarkX/row=r7 +9.", "BenchmarkX/row=r7   +9.", "no A/A pair of this machine"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestNoiseFloor: a committed A/A pair of the machine sets how far a row
// must move to be beyond its noise: a row that moved 10% is, one that
// moved 2.5% where the A/A pair itself moved it 3% is not, and a pair of
// another machine is not used.
func TestNoiseFloor(t *testing.T) {
	aaDir, a, b := resultstest.FloorFiles(t)
	fa, err := benchfile.Read(a)
	if err != nil {
		t.Fatal(err)
	}
	aa, ok := FindAA(aaDir, fa)
	if !ok {
		t.Fatal("FindAA found no pair of the machine")
	}
	floor, ok := NewFloor(aa[0], aa[1], "cycles/op")
	if !ok || floor.Of("BenchmarkX/row=r3") < 0.025 || floor.Machine >= floor.Of("BenchmarkX/row=r3") || floor.Of("BenchmarkX/row=r7") > 0.05 {
		t.Fatalf("floor %+v: want r3's own 3%%, the machine's below it, and no row's above 5%%", floor)
	}
	fb, err := benchfile.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := Compare(fa, fb, "cycles/op", floor)
	names := func(ms []RowMove) (out []string) {
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	if !slices.Contains(names(d.Beyond), "BenchmarkX/row=r3") {
		t.Errorf("beyond the shift %v: want r3 there, to be held back by its floor", names(d.Beyond))
	}
	if got := names(d.Noise); !slices.Equal(got, []string{"BenchmarkX/row=r7"}) {
		t.Errorf("beyond the noise: %v, want only r7", got)
	}
	var stdout bytes.Buffer
	Report(&stdout, fa, fb, aa, Units)
	if out := stdout.String(); !strings.Contains(out, "beyond the machine's noise") || !strings.Contains(out, "BEYOND THE NOISE") ||
		!strings.Contains(out, fmt.Sprintf("the A/A pair's own shared shift %+.2f%%: a shared shift within %.2f%%", 100*floor.Shift, 100*floor.Shared())) {
		t.Errorf("report -drift with an A/A pair says nothing of the noise:\n%s", out)
	}
	// Another machine's pair sets no floor.
	other := strings.Replace(mustRead(t, a), "6/167", "26/2", 1)
	if err := os.WriteFile(a, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if fa, err = benchfile.Read(a); err != nil {
		t.Fatal(err)
	}
	if _, ok := FindAA(aaDir, fa); ok {
		t.Error("FindAA took another machine's pair")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExactCounts: two instruction-count files compare as counts, B-A
// per row, not as a test over one run each; rows the kernel's loop did
// not time are marked.
func TestExactCounts(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "6.12.txt"), filepath.Join(dir, "7.3.txt")
	head := "virt: tcg-icount\nkernel: %s\n"
	rows := "BenchmarkTrampoline/target=xdp/attach=fentry/progs=1-2 1 %.1f instrs/op %.1f kernel-instrs/op\n" +
		"BenchmarkTrampoline/target=kfunc/attach=none/progs=0-2 1 %.1f instrs/op\n"
	if err := os.WriteFile(a, []byte(fmt.Sprintf(head+rows, "6.12", 214.2, 214.0, 10.0)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(fmt.Sprintf(head+rows, "7.3", 196.5, 196.0, 75.3)), 0o644); err != nil {
		t.Fatal(err)
	}
	fa, err := benchfile.Read(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := benchfile.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	ReportExact(&stdout, fa, fb)
	out := stdout.String()
	for _, want := range []string{"instrs/op: 2 rows, 2 changed", "~ not exact"} {
		if !strings.Contains(out, want) {
			t.Errorf("exact comparison lacks %q:\n%s", want, out)
		}
	}
	found := false
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 5 && strings.Contains(f[0], "fentry") {
			found = true
			if want := []string{"214.20", "196.50", "-17.70", "-8.3%"}; !slices.Equal(f[1:], want) {
				t.Errorf("fentry row %q, want A, B, B-A, change %q", f[1:], want)
			}
		}
	}
	if !found {
		t.Errorf("no exact fentry row:\n%s", out)
	}
	if strings.Contains(out, "shared shift") || strings.Contains(out, "p=") {
		t.Errorf("exact comparison tests significance:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if strings.Contains(l, "target=xdp") && strings.Contains(l, "~") {
			t.Errorf("the kernel-timed row is marked not exact: %q", l)
		}
	}
}

func TestBootDiff(t *testing.T) {
	parse := func(text string) *benchfile.File {
		f, err := benchfile.Parse("x.txt", []byte(text+"BenchmarkX 1 1 instrs/op\n"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := parse("kernel: 7.3\nqemu-cpu: max\ncmdline-mitigations: none\nretpoline: on\n")
	b := parse("kernel: 7.3\nqemu-cpu: max\ncmdline-mitigations: mitigations=off\nretpoline: off\n")
	got := BootDiff(a, b)
	want := []string{"cmdline-mitigations: none -> mitigations=off", "retpoline: on -> off"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("BootDiff = %q, want %q", got, want)
	}
	if d := BootDiff(a, a); len(d) != 0 {
		t.Errorf("a file against itself: %q", d)
	}
}

// TestFindAATwoMachinesOneName: every VM's host is called vm, so two
// machines' A/A pairs share a name; each machine finds its own, by its
// labels, whichever was made last.
func TestFindAATwoMachinesOneName(t *testing.T) {
	dir := t.TempDir()
	file := func(name, model, commit string) {
		text := fmt.Sprintf("cpu-vendor: X\ncpu-family-model: %s\nvirt: kvm\nkernel: 6.18\ncommit: %s\nBenchmarkX/r=1 1 10 cycles/op\n", model, commit)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file("20261202T070202Z-vm-6.18-aa1.txt", "6/207", "aaa")
	file("20261202T072158Z-vm-6.18-aa2.txt", "6/207", "aaa")
	file("20261202T110322Z-vm-6.18-aa1.txt", "25/1", "bbb")
	file("20261202T112633Z-vm-6.18-aa2.txt", "25/1", "bbb")
	// A later aa2 of the first machine, of another commit: not a pair.
	file("20261203T000000Z-vm-6.18-aa2.txt", "6/207", "ccc")
	for model, want := range map[string][2]string{
		"6/207": {"20261202T070202Z-vm-6.18-aa1.txt", "20261202T072158Z-vm-6.18-aa2.txt"},
		"25/1":  {"20261202T110322Z-vm-6.18-aa1.txt", "20261202T112633Z-vm-6.18-aa2.txt"},
	} {
		f, err := benchfile.Parse("f.txt", []byte("cpu-vendor: X\ncpu-family-model: "+model+"\nvirt: kvm\nBenchmarkX/r=1 1 10 cycles/op\n"))
		if err != nil {
			t.Fatal(err)
		}
		aa, ok := FindAA(dir, f)
		if !ok {
			t.Errorf("%s: no pair found", model)
			continue
		}
		if got := [2]string{filepath.Base(aa[0].Path), filepath.Base(aa[1].Path)}; got != want {
			t.Errorf("%s: pair %v, want %v", model, got, want)
		}
	}
}

// TestReportContention: the report says at its top how many row-runs it
// left out for too few free calls, and which file's contended-frac is
// of the rule before the judge.
func TestReportContention(t *testing.T) {
	rows := "BenchmarkX/row=a-2 1 5.0 cycles/op 0.95 contended-frac\nBenchmarkX/row=b-2 1 7.0 cycles/op 0.20 contended-frac\n"
	a, err := benchfile.Read(resultstest.WriteFile(t, "old.txt", "cpu-family-model: 6/207\n"+rows))
	if err != nil {
		t.Fatal(err)
	}
	b, err := benchfile.Read(resultstest.WriteFile(t, "new.txt", "cpu-family-model: 6/207\ncontention-rule: slower-with-reference\n"+rows))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Report(&out, a, b, [2]*benchfile.File{}, Units)
	for _, want := range []string{"old.txt: contended-frac by the rule before the judge", "old.txt: 1 of 2 row-runs had too few free calls", "new.txt: 1 of 2 row-runs had too few free calls"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Report lacks %q:\n%s", want, out.String())
		}
	}
	for _, no := range []string{"new.txt: contended-frac by the rule before"} {
		if strings.Contains(out.String(), no) {
			t.Errorf("Report says %q:\n%s", no, out.String())
		}
	}
}
