package benchfile

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// basesFile is a results file of six passes of a family like
// BenchmarkXDP: a base row (drop, 5 ns) and rows paired with it, row r
// costing 1+r ns more. In pass slowPass the base ran slowBy times in the
// rounds of the rows listed in slow (their ns/op and delta-ns/op both
// scaled), with nothing flagged; each paired row's base is shifted by
// own[r].
func basesFile(rows, slowPass int, slowBy float64, slow map[int]bool, own map[int]float64) []byte {
	var b bytes.Buffer
	for p := range 6 {
		fmt.Fprintf(&b, "cpu-vendor: AuthenticAMD\nvirt: kvm\ngoos: linux\ngoarch: amd64\npkg: bpfbench/bench\n")
		fmt.Fprintf(&b, "BenchmarkXDP/prog=drop/size=64-2\t1\t5.000 ns/op\t19.00 cycles/op\t0 contended-frac\n")
		for r := range rows {
			base, d := 5.0*(1+own[r]), float64(1+r)
			if p == slowPass && slow[r] {
				base, d = base*slowBy, d*slowBy
			}
			ns := base + d
			fmt.Fprintf(&b, "BenchmarkXDP/prog=p%d/size=64-2\t1\t%.3f ns/op\t%.3f cycles/op\t0 contended-frac\t%.4f delta-ns/op\n", r, ns, 3.8*ns, d)
		}
		fmt.Fprintf(&b, "PASS\n")
	}
	return b.Bytes()
}

// TestSlowBase: rows of one pass whose base ran 1.8 times, with nothing
// flagged and the pass as a whole not moving, are left out of every
// figure (Values) and of what benchstat is handed (CopyUncontended), and
// said so; a base 10% up, or rows whose bases differ by design, are not.
func TestSlowBase(t *testing.T) {
	data := basesFile(8, 2, 1.8, map[int]bool{1: true, 4: true, 6: true}, nil)
	f, err := Parse("slow.txt", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Discordant()) != 0 {
		t.Fatalf("passes %v disagree: the rule under test is the base's, not the pass's", f.Discordant())
	}
	if n, all := f.SlowBaseRuns(); n != 3 || all != 6*9 {
		t.Fatalf("%d of %d runs left out for their base, want 3 of 54", n, all)
	}
	for _, name := range []string{"BenchmarkXDP/prog=p1/size=64", "BenchmarkXDP/prog=p4/size=64"} {
		if n, runs := f.SlowBase(name); n != 1 || runs != 6 {
			t.Errorf("%s: %d of %d runs left out, want 1 of 6", name, n, runs)
		}
		if got := len(Values(f.Runs[name], "cycles/op")); got != 5 {
			t.Errorf("%s: %d values, want the 5 runs whose base ran at the family's level", name, got)
		}
	}
	if n, _ := f.SlowBase("BenchmarkXDP/prog=p0/size=64"); n != 0 {
		t.Error("a row whose base ran at the family's level in every pass lost a run")
	}
	if s := f.SlowBaseSummary(); !strings.Contains(s, "3 of 54 row-runs") || !strings.Contains(s, "prog=p1/size=64 (pass 3)") {
		t.Errorf("summary %q: want the count and the first row and pass", s)
	}
	var out bytes.Buffer
	if err := copyUncontended(&out, data); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\nBenchmark"); n != 6*9-3 {
		t.Errorf("copied %d result lines, want the %d whose base ran at the family's level", n, 6*9-3)
	}

	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"a base 10% up", basesFile(8, 2, 1.1, map[int]bool{1: true, 4: true}, nil)},
		{"bases that differ by design", basesFile(8, 2, 1.8, map[int]bool{1: true}, map[int]float64{7: 1})},
		{"too few paired rows", basesFile(4, 2, 1.8, map[int]bool{1: true}, nil)},
	} {
		f, err := Parse(tc.name, tc.data)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := f.SlowBaseRuns(); n != 0 {
			t.Errorf("%s: %d runs left out for their base, want none (%s)", tc.name, n, f.SlowBaseSummary())
		}
	}
}

// TestSlowBaseRecorded reads two committed files of the AMD EPYC 26/2 VM
// (results/notes/2026-12-07-amd-26-2-compare.md): the first file of the
// pair whose first pass ran most XDP rows 1.7-2.0 times with nothing
// flagged, where the rule leaves out that pass's slow rows and nothing of
// the passes around it; and the first file of the pair made just before,
// where it leaves out nothing.
func TestSlowBaseRecorded(t *testing.T) {
	for _, tc := range []struct {
		path string
		want int
	}{
		{"20261207T121528Z-vm-amd-26-2-6.18.44-fc-v1272-aa1.txt", 10},
		{"aa/20261207T120621Z-vm-amd-26-2-6.18.44-fc-v1272-aa1.txt", 0},
	} {
		f, err := Read(filepath.Join("..", tc.path))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := f.SlowBaseRuns()
		if n != tc.want {
			t.Errorf("%s: %d runs left out for their base, want %d (%s)", tc.path, n, tc.want, f.SlowBaseSummary())
		}
		for _, name := range f.Names {
			for _, r := range f.Runs[name] {
				if r.slowOnly() && (r.Pass != 0 || r.Name.Family != "BenchmarkXDP") {
					t.Errorf("%s: %s of pass %d left out: want only pass 1's XDP rows", tc.path, name, r.Pass+1)
				}
			}
		}
	}
}
