// Package resultstest holds what the report's packages' tests share: the
// fuzz seeds of a results file, and the committed results files, read by
// the package under test's own reader.
package resultstest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtures are the files every package of the report keeps in its
// testdata: a retpoline boot, a mitigations=off boot, and two
// instruction-count files.
var fixtures = []string{"retpoline.txt", "mitigations-off.txt", "icount-6.12.txt", "icount-7.0.txt"}

// lines are the shapes of line the suite writes: results, failures,
// skips with their logs, labels, unit lines, and values that are not
// numbers.
var lines = []string{
	"",
	"kernel: 6.18.0\nretpoline: on\nmitigations: auto\ncfi: off\n",
	"BenchmarkXDP/prog=drop/size=64-2\t1\t5.5 ns/op\n",
	"BenchmarkXDP/prog=aa/size=64-2\t1\t5.5 ns/op\t0.01 delta-ns/op\t0.02 delta-ci95-ns\n",
	"BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc-2\t1\t15 ns/op\t10 delta-ns/op\t0.2 delta-ci95-ns\n",
	"BenchmarkDispatcher/dispatcher=k0/fill=none/prog=xdp-2\t1\tNaN ns/op\nBenchmarkDispatcher/dispatcher=full/fill=generic/prog=xdp-2\t1\t+Inf ns/op\t-Inf delta-ns/op\n",
	"BenchmarkTrampoline/target=helper/attach=fentry\n    trampoline_test.go:463: EPERM\n--- SKIP: BenchmarkTrampoline/target=helper/attach=fentry\n",
	"    x_test.go:1: clocks disagree\n--- FAIL: BenchmarkCall/call=tailcall/hops=1-2\n--- FAIL: BenchmarkCall\n",
	"BenchmarkAttach/action=drop/mode=native/prog=drop/dispatcher=full-2\t1\t2e7 capacity-pps\t30 rx-ns/pkt\t0 rx-bound\t8 delta-ns/pkt\t0.4 delta-ci95-ns\n",
	"BenchmarkCall/call=tailcall/hops=1-2\t1\t9 ns/op\nkernel: 6.1.0\nBenchmarkCall/call=tailcall/hops=2-2\t1\t18 ns/op\n",
	"Unit ns/op assume=nothing\nvirt: tcg-icount\nkernel: 7.0\nBenchmarkTrampoline/target=helper/attach=fexit/progs=1-2\t1\t244 delta-instrs/op\n",
	"BenchmarkTrampoline/target=xdp/attach=fentry/progs=1-2\t1\t10 ns/op\t5 delta-ns/op\nBenchmarkTrampoline/target=xdp/attach=none/progs=0-2\t1\t5 ns/op\n",
	"BenchmarkCall/call=tailcall/hops=x-2\t1\t9 ns/op\nBenchmarkDispatcher/dispatcher=kq/fill=none/prog=xdp-2\t1\t1e308 ns/op\n",
	"cpu-family-model: 6/207\nBenchmarkX/row=a-2 1 5.0 ns/op 0.50 contended-frac\nBenchmarkX/row=a-2 1 9.0 ns/op 0.95 contended-frac\n",
	"contention-rule: slower-with-reference\nBenchmarkX/row=a-2 1 5.0 ns/op 0.50 contended-frac\nBenchmarkX/row=a-2 1 9.0 ns/op 0.95 contended-frac\n",
}

// Seed adds to f the fixtures in the package's testdata, each whole and
// its head (small inputs mutate faster), and the shapes of line the suite
// writes.
func Seed(f *testing.F) {
	f.Helper()
	for _, name := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if i := bytes.Index(data[min(len(data), 3000):], []byte("\n")); i >= 0 {
			f.Add(data[:min(len(data), 3000)+i+1])
		}
	}
	for _, s := range lines {
		f.Add([]byte(s))
	}
}

// Committed reads the results files committed under results/ with read,
// which hold every family's sub-benchmark names as the suite wrote them.
// It skips where there are none: a go test -exec guest has only the test
// binary.
func Committed[T any](t testing.TB, read func(path string) (T, error)) []T {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "results", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("no results/*.txt here: a go test -exec guest has only the test binary")
	}
	var files []T
	for _, p := range paths {
		f, err := read(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// DriftFiles writes two results files of 20 rows, ten passes each, with
// 0.5% noise: in B every row is 1% slower in cycles/op and 4% faster in
// ns/op (the host's clock went up), and row r7 is 10% slower besides.
func DriftFiles(t testing.TB) (a, b string) {
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

// writeRows writes a results file of 20 rows, ten passes each, with 0.5%
// noise, each row's cycles/op scaled by move(row).
func WriteRows(t testing.TB, path string, seed uint64, move func(row int) float64) {
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

// FloorFiles writes an A/A pair of one machine in aaDir, in which row r3
// moved 3%, and two files a and b of that machine, in which r7 moved 10%
// and r3 2.5%.
func FloorFiles(t testing.TB) (aaDir, a, b string) {
	t.Helper()
	dir := t.TempDir()
	aaDir = filepath.Join(dir, "aa")
	if err := os.Mkdir(aaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	one := func(int) float64 { return 1 }
	WriteRows(t, filepath.Join(aaDir, "20260101T000000Z-vm-6.18-aa1.txt"), 1, one)
	WriteRows(t, filepath.Join(aaDir, "20260101T001000Z-vm-6.18-aa2.txt"), 2, func(i int) float64 {
		return map[bool]float64{true: 1.03, false: 1}[i == 3]
	})
	a, b = filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	WriteRows(t, a, 3, one)
	WriteRows(t, b, 4, func(i int) float64 {
		return map[int]float64{7: 1.10, 3: 1.025}[i] + map[bool]float64{true: 1}[i != 7 && i != 3]
	})
	return aaDir, a, b
}

// WriteFile writes text as a results file name in a temporary directory
// and returns its path.
func WriteFile(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Testdata reads the named files of the package's testdata with read.
func Testdata[T any](t testing.TB, read func(path string) (T, error), names ...string) []T {
	t.Helper()
	var files []T
	for _, n := range names {
		f, err := read(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
