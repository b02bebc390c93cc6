package benchfile

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"regexp"
	"testing"

	"bpfbench/results/internal/resultstest"
)

// FuzzParse feeds the reader arbitrary files: it may refuse one (a line
// too long for benchfmt), never panic or hang, and what it reads must be
// consistent: the same twice, every name with its runs and back, every
// value finite, every selection of a row it read answered. The seeds are
// the test data and the shapes of line the suite writes (results,
// failures, skips with their logs, labels, unit lines). The verdicts and
// the plots fuzz what they make of a file in their own packages.
func FuzzParse(f *testing.F) {
	resultstest.Seed(f)
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
			if got := ParseName(name).String(); got != name && !regexp.MustCompile(`-[0-9]+$`).MatchString(name) {
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
