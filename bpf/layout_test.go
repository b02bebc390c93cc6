package bpf_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers is the suite's design: a package imports only packages of lower
// layers, so the method (measure) knows nothing of the rigs built on it,
// and the machine-safety code (host) nothing of what uses it.
var layers = map[string]int{
	"bpf":                          0, // the generated loaders and frames
	"bpf/labels":                   0,
	"bpf/units":                    0,
	"bpf/xsk":                      0,
	"bpf/sched":                    0,
	"bpf/host/proc":                0,
	"bpf/host/tracefs":             0,
	"bpf/measure/robust":           0,
	"bpf/measure/mark":             0, // the anatomy's window marks and log
	"bpf/measure/pattern":          0, // testing's rule for which rows -bench runs
	"bpf/measure/runlog":           0, // the run's summary and diagnostics lines
	"results/stat":                 0,
	"bpf/host/syslock":             1,
	"bpf/measure/gauge":            1,
	"bpf/measure/testrun":          1, // the test_run loop, timed
	"results/benchfile":            1,
	"results/anatomy":              2,
	"results/mechanism":            2,
	"results/internal/resultstest": 0, // tests only
	"internal/child":               2, // tests only: a test's own binary run as a child
	"bpf/host":                     2,
	"bpf/host/snapshot":            1,
	"bpf/probe":                    3,
	"internal/testutil":            4, // tests only
	"results/claims":               3,
	"results/drift":                3,
	"results/plots":                3,
	"bpf/measure":                  4,
	"results/verdict":              4,
	"results/gate":                 4, // the CI gate: drift and mechanisms held to a rule
	"bpf/iface":                    3, // a user's NIC: below the veth rig, not on it
	"bpf/rig":                      5,
	"bpf/harness":                  6, // what the families share: remote stages, reports
	"bench":                        7,
	"results/report":               7,
	"tools/contention":             7, // a probe of the machine, beside the suite
	"tools/anatomy":                7,
	"tools/passstate":              7, // a probe of the machine, beside the suite
}

// TestImportsRunOneWay parses every non-test Go file of the module and
// fails on an import of the same or a higher layer, and on a package the
// table does not place.
func TestImportsRunOneWay(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Skipf("the module's source tree is not here (%v): a go test -exec guest has only the test binary; the host run checks the layout", err)
	}
	const module = "bpfbench/"
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		layer, ok := layers[rel]
		if !ok {
			t.Errorf("%s: package %s has no layer in the table", path, rel)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			dep, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			if l, ok := layers[dep]; !ok || l >= layer {
				t.Errorf("%s imports %s: layer %d may import only lower layers, %s is layer %d", rel, dep, layer, dep, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go file checked")
	}
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
