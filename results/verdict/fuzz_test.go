package verdict

import (
	"io"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/internal/resultstest"
)

// FuzzVerdicts feeds what the results reader makes of arbitrary files to
// every claim, alone and in pairs, and to the report: none may panic or
// hang, and every outcome names its claim, its verdict and its files. The
// seeds are the test data and the shapes of line the suite writes
// (results, failures, skips with their logs, labels, unit lines).
func FuzzVerdicts(f *testing.F) {
	resultstest.Seed(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := benchfile.Parse("fuzz.txt", data)
		if err != nil {
			return // benchfmt refuses the file (a line too long): said, not a crash
		}
		other, err := benchfile.Parse("other.txt", data)
		if err != nil {
			t.Fatalf("the same data read twice: %v", err)
		}
		for _, files := range [][]*benchfile.File{{file}, {file, other}} {
			for i := range claims.All {
				for _, o := range Evaluate(&claims.All[i], files) {
					if o.Claim == nil || o.Verdict.String() == "" || len(o.Files) == 0 {
						t.Fatalf("claim %s: an outcome without claim, verdict or files: %+v", claims.All[i].ID, o)
					}
				}
			}
		}
		Report(io.Discard, []*benchfile.File{file})
	})
}
