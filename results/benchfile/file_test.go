package benchfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/results/internal/resultstest"
)

func TestReadFile(t *testing.T) {
	f := readTestdata(t, "retpoline.txt")[0]
	if got := f.Label("retpoline"); got != "on" {
		t.Errorf("label retpoline = %q", got)
	}
	k16 := "BenchmarkDispatcher/dispatcher=k16/fill=generic/prog=xdp"
	if n := len(f.Runs[k16]); n != 9 {
		t.Errorf("%s: %d runs read, want the 9 that did not fail", k16, n)
	}
	if why := f.Failed[k16]; len(why) != 1 || !strings.Contains(why[0], "clocks disagree") {
		t.Errorf("%s: failures %q, want one saying the clocks disagree", k16, why)
	}
	if _, ok := f.Failed["BenchmarkDispatcher"]; ok {
		t.Error("the family's own FAIL line was counted as a failed sub-benchmark")
	}
	fentry := "BenchmarkTrampoline/target=helper/attach=fentry"
	if why := f.Skipped[fentry]; len(why) != 1 || !strings.Contains(why[0], "EPERM") {
		t.Errorf("%s: skip reasons %q, want the -v log line", fentry, why)
	}
	if _, xs, err := f.Select(Sel{Name: ParseName("BenchmarkXDP/prog=drop/size=64"), Unit: "ns/op"}); err != nil || len(xs) != 10 || xs[0] != 7.4 {
		t.Errorf("select ns/op of XDP drop: %v, %v (benchfmt tidies ns/op to sec/op: want ns)", xs, err)
	}
	if _, _, err := f.Select(Sel{Name: ParseName("BenchmarkDispatcher/fill=generic"), Unit: "ns/op"}); err == nil || !strings.Contains(err.Error(), "name more keys") {
		t.Errorf("an ambiguous selection gave %v", err)
	}
	var skipped *SkippedError
	if _, _, err := f.Select(Sel{Name: ParseName(fentry), Unit: "delta-ns/op"}); !errors.As(err, &skipped) || !strings.Contains(skipped.Reason, "EPERM") {
		t.Errorf("select the skipped %s: %v, want a SkippedError with its reason", fentry, err)
	}
	if _, _, err := f.Select(Sel{Name: ParseName("BenchmarkAFXDP/app=rxdrop/mode=copy"), Unit: "delta-ns/pkt"}); !errors.Is(err, ErrNoData) {
		t.Errorf("select a row not in the file: %v, want ErrNoData", err)
	}
}

// TestNonFinite: values that are not numbers are left out with a
// warning, not turned into estimates.
func TestNonFinite(t *testing.T) {
	f, err := Parse("nan.txt", []byte("BenchmarkXDP/prog=drop/size=64-2\t1\tNaN ns/op\nBenchmarkXDP/prog=drop/size=64-2\t1\t+Inf ns/op\nBenchmarkXDP/prog=drop/size=64-2\t1\t5.5 ns/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, xs, err := f.Select(Sel{Name: ParseName("BenchmarkXDP/prog=drop/size=64"), Unit: "ns/op"}); err != nil || len(xs) != 1 || xs[0] != 5.5 {
		t.Errorf("select: %v, %v", xs, err)
	}
	if len(f.Warnings) == 0 || !strings.Contains(f.Warnings[len(f.Warnings)-1], "not finite") {
		t.Errorf("no warning about the values left out: %q", f.Warnings)
	}
}

// TestUncontended: the runs with too few free calls are left out of the
// values and of what benchstat is given; the others stay, configuration
// lines too. A file of the old rule says so, and leaves out the same.
func TestUncontended(t *testing.T) {
	text := "cpu-family-model: 6/207\ncontention-rule: slower-with-reference\n" +
		"BenchmarkX/row=a-2 1 5.0 ns/op 0.50 contended-frac\n" +
		"BenchmarkX/row=a-2 1 9.0 ns/op 0.95 contended-frac\n" +
		"BenchmarkX/row=b-2 1 7.0 ns/op\n"
	path := resultstest.WriteFile(t, "x.txt", text)
	var out strings.Builder
	if err := CopyUncontended(&out, path); err != nil {
		t.Fatal(err)
	}
	want := "cpu-family-model: 6/207\ncontention-rule: slower-with-reference\n" +
		"BenchmarkX/row=a-2 1 5.0 ns/op 0.50 contended-frac\n" +
		"BenchmarkX/row=b-2 1 7.0 ns/op\n"
	if out.String() != want {
		t.Errorf("CopyUncontended wrote:\n%s\nwant:\n%s", out.String(), want)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if vs := Values(f.Runs["BenchmarkX/row=a"], "ns/op"); !slices.Equal(vs, []float64{5}) {
		t.Errorf("values of row a: %v, want the uncontended run's 5 only", vs)
	}
	if n, all := f.ContendedRuns(); n != 1 || all != 3 || f.OldRule() {
		t.Errorf("contended runs %d of %d, old rule %v; want 1 of 3, false", n, all, f.OldRule())
	}
	if _, _, err := f.Select(Sel{Name: ParseName("BenchmarkX/row=a"), Unit: "contended-frac"}); err != nil {
		t.Errorf("select contended-frac of row a: %v", err)
	}
	every := strings.ReplaceAll(text, "0.50 contended", "0.99 contended")
	if err := os.WriteFile(path, []byte(every), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err = Read(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Select(Sel{Name: ParseName("BenchmarkX/row=a"), Unit: "ns/op"}); !errors.Is(err, ErrContended) {
		t.Errorf("select a row with too few free calls: %v, want ErrContended", err)
	}
	old := strings.ReplaceAll(every, "contention-rule: slower-with-reference\n", "")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err = Read(path); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.ContendedRuns(); n != 2 || !f.OldRule() {
		t.Errorf("old-rule file: %d contended runs, old rule %v; want 2, true", n, f.OldRule())
	}
}

// readTestdata reads files of testdata/.
func readTestdata(t *testing.T, names ...string) []*File {
	t.Helper()
	var files []*File
	for _, n := range names {
		f, err := Read(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestFamilyFailLine: go test repeats a sub-benchmark's failure on its
// family's own line; that line is no failure of its own, however the
// lines are ordered, and a family that failed by itself is one.
func TestFamilyFailLine(t *testing.T) {
	data := []byte("    x_test.go:1: clocks disagree\n--- FAIL: BenchmarkCall/call=tailcall/hops=1-2\n--- FAIL: BenchmarkCall\n" +
		"    y_test.go:2: no BTF\n--- FAIL: BenchmarkXDP\n")
	for range 20 { // the order of a map once decided it
		f, err := Parse("x.txt", data)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.Failed["BenchmarkCall"]; ok {
			t.Fatalf("the family's own FAIL line was counted as a failure: %q", f.Failed)
		}
		if why := f.Failed["BenchmarkCall/call=tailcall/hops=1"]; len(why) != 1 || why[0] != "clocks disagree" {
			t.Fatalf("the sub-benchmark's failure: %q", why)
		}
		if why := f.Failed["BenchmarkXDP"]; len(why) != 1 || why[0] != "no BTF" {
			t.Fatalf("a family that failed by itself: %q", why)
		}
	}
}
