package plots

import (
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/internal/resultstest"
)

func readTestdata(t *testing.T, names ...string) []*benchfile.File {
	return resultstest.Testdata(t, benchfile.Read, names...)
}

// committed reads the results files committed under results/.
func committed(t *testing.T) []*benchfile.File {
	return resultstest.Committed(t, benchfile.Read)
}
