package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"bpfbench/results/benchfile"
)

// FuzzFigures feeds what the results reader makes of arbitrary files to
// the plots: none may panic or hang, and a figure that renders is an SVG
// document. The seeds are the test data and the shapes of line the suite
// writes (results, failures, skips with their logs, labels, unit lines).
// An execution renders SVG and takes milliseconds: .ci/fuzz bounds the
// minimization of what it finds (-fuzzminimizetime), which otherwise
// takes up to a minute per new input.
func FuzzFigures(f *testing.F) {
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
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := benchfile.Parse("fuzz.txt", data)
		if err != nil {
			return // benchfmt refuses the file (a line too long): said, not a crash
		}
		figs, err := figures(file)
		if err != nil {
			return // a plotter refusing its data (gonum's errors) is reported, not a crash
		}
		for _, fig := range figs {
			svg, err := fig.render()
			if err != nil {
				t.Logf("render %s: %v", fig.what, err)
				continue
			}
			if !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("</svg>")) {
				t.Fatalf("render %s: not an SVG document: %.80q", fig.what, svg)
			}
		}
	})
}
