package benchfile

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse feeds the reader arbitrary files: it may refuse one (a line
// too long for benchfmt), never panic or hang, and what it reads must be
// consistent: the same twice, every name with its runs and back, every
// value finite, every selection of a row it read answered. The seeds are
// the test data and the shapes of line the suite writes (results,
// failures, skips with their logs, labels, unit lines). The verdicts and
// the plots fuzz what they make of a file in their own packages.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"retpoline.txt", "mitigations-off.txt", "icount-6.12.txt", "icount-7.0.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		// Its head too: small inputs mutate faster.
		if i := bytes.Index(data[min(len(data), 3000):], []byte("\n")); i >= 0 {
			f.Add(data[:min(len(data), 3000)+i+1])
		}
	}
	for _, seed := range []string{
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
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.txt", data)
		if err != nil {
			return // benchfmt refuses the file (a line too long): said, not a crash
		}
		again, err := Parse("fuzz.txt", data)
		if err != nil {
			t.Fatalf("the same data read twice: %v", err)
		}
		if !reflect.DeepEqual(file, again) {
			t.Fatal("the same data read twice gives two files")
		}
		if len(file.Names) != len(file.Runs) {
			t.Fatalf("%d names, %d rows", len(file.Names), len(file.Runs))
		}
		for _, name := range file.Names {
			runs := file.Runs[name]
			if len(runs) == 0 {
				t.Fatalf("%s: a name without runs", name)
			}
			// A name read twice loses a second -<digits> suffix: the suite
			// never ends a value so (the GOMAXPROCS suffix is stripped).
			if got := ParseName(name).String(); got != name && !procsSuffix.MatchString(name) {
				t.Fatalf("%s: read back as %s", name, got)
			}
			for _, r := range runs {
				if r.Name.String() != name {
					t.Fatalf("a run of %s named %s", name, r.Name)
				}
				for u, v := range r.Values {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("%s: %s is %v", name, u, v)
					}
					// A row read is never missing or skipped, and gives its
					// value unless it was measured on a contended core; a
					// selection may still name too few keys to tell it from
					// a row with more.
					_, xs, err := file.Select(Sel{Name: r.Name, Unit: u})
					var skipped *SkippedError
					switch {
					case errors.As(err, &skipped):
						t.Fatalf("%s %s: a row read is called skipped: %v", name, u, err)
					case errors.Is(err, ErrNoData) || errors.Is(err, ErrContended):
						if !r.Contended() {
							t.Fatalf("%s %s: %v, but a run has it uncontended", name, u, err)
						}
					case err == nil && len(xs) == 0:
						t.Fatalf("%s %s: selected, but no values", name, u)
					}
					file.Within(Sel{Name: r.Name, Unit: u})
				}
			}
		}
		file.Stem()
		file.Emulated()
		file.MissingLabels(BootLabels)
		var out bytes.Buffer
		if err := copyUncontended(&out, data); err != nil {
			t.Fatal(err)
		}
		if out.Len() > len(data) {
			t.Fatalf("CopyUncontended wrote %d bytes of %d", out.Len(), len(data))
		}
	})
}
