package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// driftFiles writes two results files of 20 rows, ten passes each, with
// 0.5% noise: in B every row is 1% slower in cycles/op and 4% faster in
// ns/op (the host's clock went up), and row r7 is 10% slower besides.
func driftFiles(t *testing.T) (a, b string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var ta, tb strings.Builder
	for _, w := range []*strings.Builder{&ta, &tb} {
		w.WriteString("cpu-family-model: 6/167\nvirt: kvm\n")
	}
	noise := func() float64 { return 1 + 0.005*rng.NormFloat64() }
	for range 10 {
		for i := range 20 {
			base := float64(10 + i)
			cyc, ns := 3.6*base*noise(), base*noise()
			fmt.Fprintf(&ta, "BenchmarkX/row=r%d-2 1 %.4f ns/op %.4f cycles/op\n", i, ns, cyc)
			cyc, ns = 3.6*base*noise()*1.01, base*noise()*0.96
			if i == 7 {
				cyc, ns = cyc*1.10, ns*1.10
			}
			fmt.Fprintf(&tb, "BenchmarkX/row=r%d-2 1 %.4f ns/op %.4f cycles/op\n", i, ns, cyc)
		}
	}
	dir := t.TempDir()
	a, b = filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for p, s := range map[string]string{a: ta.String(), b: tb.String()} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

func TestDriftCommand(t *testing.T) {
	a, b := driftFiles(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", "-all", a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"cycles/op: 20 rows; shared shift +1.", "ns/op: 20 rows; shared shift -", "furthest from it: BenchmarkX/row=r7 +9.", "BenchmarkX/row=r7   +9."} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report -drift output lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "Verdicts") {
		t.Errorf("report -drift printed verdicts:\n%s", stdout.String())
	}
	if code := run([]string{"-drift", a}, &stdout, &stderr); code != 2 {
		t.Errorf("report -drift with one file: exit %d, want 2", code)
	}
}

// writeRows writes a results file of 20 rows, ten passes each, with 0.5%
// noise, each row's cycles/op scaled by move(row).
func writeRows(t *testing.T, path string, seed uint64, move func(row int) float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var w strings.Builder
	w.WriteString("cpu-vendor: GenuineIntel\ncpu-family-model: 6/167\nvirt: kvm\n")
	for range 10 {
		for i := range 20 {
			fmt.Fprintf(&w, "BenchmarkX/row=r%d-2 1 %.4f cycles/op\n", i, float64(10+i)*move(i)*(1+0.005*rng.NormFloat64()))
		}
	}
	if err := os.WriteFile(path, []byte(w.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNoiseFloorCommand: the command takes the A/A pair from -aa and says which
// rows moved beyond the machine's noise (the floor itself:
// drift.TestNoiseFloor).
func TestNoiseFloorCommand(t *testing.T) {
	dir := t.TempDir()
	aaDir := filepath.Join(dir, "aa")
	if err := os.Mkdir(aaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	one := func(int) float64 { return 1 }
	writeRows(t, filepath.Join(aaDir, "20260101T000000Z-vm-6.18-aa1.txt"), 1, one)
	writeRows(t, filepath.Join(aaDir, "20260101T001000Z-vm-6.18-aa2.txt"), 2, func(i int) float64 {
		return map[bool]float64{true: 1.03, false: 1}[i == 3]
	})
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeRows(t, a, 3, one)
	writeRows(t, b, 4, func(i int) float64 {
		return map[int]float64{7: 1.10, 3: 1.025}[i] + map[bool]float64{true: 1}[i != 7 && i != 3]
	})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", "-aa", aaDir, a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "beyond the machine's noise") || !strings.Contains(out, "BEYOND THE NOISE") {
		t.Errorf("report -drift with an A/A pair says nothing of the noise:\n%s", out)
	}
	// Without the pair, no floor.
	stdout.Reset()
	if code := run([]string{"-drift", "-aa", filepath.Join(dir, "none"), a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "no A/A pair of this machine") || strings.Contains(out, "BEYOND THE NOISE") {
		t.Errorf("report -drift without an A/A pair:\n%s", out)
	}
}

// TestExactCountsCommand: given two instruction-count files, -drift compares
// them as counts (the comparison itself: drift.TestExactCounts).
func TestExactCountsCommand(t *testing.T) {
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
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"instrs/op: 2 rows, 2 changed", "~ not exact"} {
		if !strings.Contains(out, want) {
			t.Errorf("exact comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "shared shift") || strings.Contains(out, "p=") {
		t.Errorf("exact comparison tests significance:\n%s", out)
	}
}

// TestUncontended: the runs that never saw an uncontended core are left
// out of what benchstat is given, of the shift and of the floor; the
// others stay, configuration lines too.
func TestUncontended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.txt")
	text := "cpu-family-model: 6/207\n" +
		"BenchmarkX/row=a-2 1 5.0 ns/op 0.50 contended-frac\n" +
		"BenchmarkX/row=a-2 1 9.0 ns/op 0.95 contended-frac\n" +
		"BenchmarkX/row=b-2 1 7.0 ns/op\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-uncontended", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -uncontended: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if strings.Contains(out, "9.0 ns/op") || !strings.Contains(out, "5.0 ns/op") || !strings.Contains(out, "row=b") || !strings.Contains(out, "cpu-family-model: 6/207") {
		t.Errorf("report -uncontended printed:\n%s", out)
	}
}
