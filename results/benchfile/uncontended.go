package benchfile

import (
	"io"
	"os"
	"strconv"
	"strings"
)

// CopyUncontended copies the results file at path to w, less the result
// lines of runs with too few free calls for their figures to be the
// program's (Run.Contended), of passes that disagreed with the file
// (Run.Discordant) and of runs whose base ran slow (Run.SlowBase): what
// make compare hands benchstat, which would otherwise compare those
// runs' figures. Every other line is copied as it is.
func CopyUncontended(w io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return copyUncontended(w, data)
}

// copyUncontended is CopyUncontended of a file's contents.
func copyUncontended(w io.Writer, data []byte) error {
	f, err := Parse("", data)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	pass := passOf(lines)
	slow := map[int]bool{}
	for _, runs := range f.Runs {
		for _, r := range runs {
			if r.SlowBase {
				slow[r.line] = true
			}
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "Benchmark") && (f.discordant(pass[i]) || slow[i+1] || contendedLine(l)) {
			continue
		}
		if _, err := io.WriteString(w, l); err != nil {
			return err
		}
	}
	return nil
}

// contendedLine says whether a result line's run had too few free calls
// (Run.Contended).
func contendedLine(l string) bool {
	fields := strings.Fields(l)
	r := Run{Values: map[string]float64{}}
	for i := 2; i+1 < len(fields); i += 2 {
		if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
			r.Values[fields[i+1]] = v
		}
	}
	return r.Contended()
}
