package benchfile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// passesFile is a results file of make bench's shape: n passes, each a go
// test run with its header, of rows rows in cycles/op and ns/op, every
// row at its own level with a 0.5% jitter, and pass p's rows all
// multiplied by scale(p).
func passesFile(n, rows int, scale func(p int) float64) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	for p := range n {
		fmt.Fprintf(&b, "cpu-vendor: AuthenticAMD\nvirt: kvm\ngoos: linux\ngoarch: amd64\npkg: bpfbench/bench\n")
		for r := range rows {
			x := float64(20+5*r) * (1 + 0.005*rng.NormFloat64()) * scale(p)
			fmt.Fprintf(&b, "BenchmarkXDP/prog=p%d/size=64-2\t1\t%.3f ns/op\t%.3f cycles/op\t0 contended-frac\n", r, x/4, x)
		}
		fmt.Fprintf(&b, "PASS\n# bpfbench summary: %d rows measured\n", rows)
	}
	return b.Bytes()
}

// TestDiscordantPass: of six passes, one whose rows all ran 1.8 times
// the others' is found and left out of every figure (Values) and of what
// benchstat is handed (CopyUncontended), and said so; passes that differ
// by their jitter, or by a percent together, agree; too few passes or
// an instruction-count file are not judged.
func TestDiscordantPass(t *testing.T) {
	f, err := Parse("six.txt", passesFile(6, 30, func(p int) float64 {
		if p == 3 {
			return 1.8
		}
		return 1
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Discordant(); len(got) != 1 || got[0] != 4 {
		t.Fatalf("discordant passes %v, want [4]: %+v", got, f.Passes)
	}
	name := "BenchmarkXDP/prog=p0/size=64"
	if n, runs := f.DiscordantRuns(name); n != 1 || runs != 6 {
		t.Errorf("%s: %d of %d runs discordant, want 1 of 6", name, n, runs)
	}
	for _, x := range Values(f.Runs[name], "cycles/op") {
		if x > 25 {
			t.Errorf("Values kept %v, a run of the slow pass", x)
		}
	}
	if got := len(Values(f.Runs[name], "ns/op")); got != 5 {
		t.Errorf("%d ns/op values, want the 5 passes that agree", got)
	}
	if s := f.PassSummary(); !strings.Contains(s, "pass 4 (+80") || !strings.Contains(s, "left out") {
		t.Errorf("summary %q: want pass 4, its move, and that it is left out", s)
	}
	var out bytes.Buffer
	if err := copyUncontended(&out, passesFile(6, 30, func(p int) float64 { return map[bool]float64{true: 1.8, false: 1}[p == 3] })); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\nBenchmark"); n != 5*30 {
		t.Errorf("copied %d result lines, want the 150 of the five passes that agree", n)
	}

	for _, tc := range []struct {
		name  string
		n     int
		scale func(p int) float64
	}{
		{"jitter alone", 6, func(int) float64 { return 1 }},
		{"one pass 1% slower", 6, func(p int) float64 { return map[bool]float64{true: 1.01, false: 1}[p == 2] }},
		{"passes 1% apart in turn", 8, func(p int) float64 { return 1 + 0.01*float64(p%2) }},
		{"three passes, one slow: not judged", 3, func(p int) float64 { return map[bool]float64{true: 1.8, false: 1}[p == 0] }},
	} {
		f, err := Parse(tc.name, passesFile(tc.n, 30, tc.scale))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Discordant(); len(got) != 0 {
			t.Errorf("%s: passes %v left out, want none (%+v)", tc.name, got, f.Passes)
		}
	}
	counted := strings.ReplaceAll(string(passesFile(6, 30, func(p int) float64 { return 1 + float64(p/5) })), "virt: kvm", "virt: tcg-icount")
	if f, _ := Parse("icount.txt", []byte(counted)); f.Passes != nil {
		t.Errorf("an instruction-count file's passes were judged: %+v", f.Passes)
	}
}
