package plots

import (
	"path/filepath"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/internal/resultstest"
)

// readTestdata reads files of testdata/.
func readTestdata(t *testing.T, names ...string) []*benchfile.File {
	t.Helper()
	var files []*benchfile.File
	for _, n := range names {
		f, err := benchfile.Read(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// committed reads the results files committed under results/.
func committed(t *testing.T) []*benchfile.File {
	return resultstest.Committed(t, benchfile.Read)
}
