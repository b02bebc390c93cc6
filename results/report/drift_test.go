package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// The shared part of a move is measured and taken out: benchstat's test
// calls nearly every row different, and once B is divided by the shared
// shift only the row that moved by itself is left.
func TestDrift(t *testing.T) {
	pa, pb := driftFiles(t)
	a, err := ReadFile(pa)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		unit  string
		shift float64
	}{{"cycles/op", 0.01}, {"ns/op", -0.04}} {
		s, ok := Drifts(a, b, c.unit)
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
	if _, ok := Drifts(a, b, "instrs/op"); ok {
		t.Error("instrs/op: rows in common, but neither file has the unit")
	}
}

func TestDriftCommand(t *testing.T) {
	a, b := driftFiles(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", a, b}, &stdout, &stderr); code != 0 {
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
