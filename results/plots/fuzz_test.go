package plots

import (
	"bytes"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/internal/resultstest"
)

// FuzzFigures feeds what the results reader makes of arbitrary files to
// the plots: none may panic or hang, and a figure that renders is an SVG
// document. The seeds are the test data and the shapes of line the suite
// writes (results, failures, skips with their logs, labels, unit lines).
// An execution renders SVG and takes milliseconds: .ci/fuzz bounds the
// minimization of what it finds (-fuzzminimizetime), which otherwise
// takes up to a minute per new input.
func FuzzFigures(f *testing.F) {
	resultstest.Seed(f)
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
