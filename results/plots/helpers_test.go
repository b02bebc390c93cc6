package plots

import (
	"path/filepath"
	"testing"

	"bpfbench/results/benchfile"
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
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "results", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("no results/*.txt here: a go test -exec guest has only the test binary")
	}
	var files []*benchfile.File
	for _, p := range paths {
		f, err := benchfile.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
