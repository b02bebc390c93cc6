package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bpfbench/results/internal/resultstest"
	"bpfbench/results/verdict"
)

// TestNoResults: the command says a file without result lines holds
// none (not "not measurable on this kernel"), and exits non-zero when no
// file has a result (the verdicts themselves: verdict.TestNoResults).
func TestNoResults(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"labels only": "kernel: 6.18.0\nretpoline: on\nmitigations: auto\ncfi: off\n",
		"no results":  "goos: linux\nPASS\nok  \tbpfbench/bench\t0.01s\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := resultstest.WriteFile(t, "x.txt", text)
			var stdout, stderr bytes.Buffer
			if code := run([]string{"-plots=false", path}, &stdout, &stderr); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if !strings.Contains(stdout.String(), "holds no results") || !strings.Contains(stderr.String(), "no results") {
				t.Errorf("the report does not say the file holds no results:\n%s\n%s", stdout.String(), stderr.String())
			}
			if strings.Contains(stdout.String(), verdict.NotMeasurable.String()) {
				t.Errorf("the report calls a claim not measurable on a file without results:\n%s", stdout.String())
			}
		})
	}
	// One file with results is enough for a zero status, and the empty
	// one takes no part.
	empty := resultstest.WriteFile(t, "empty.txt", "")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-plots=false", empty, filepath.Join("testdata", "retpoline.txt")}, &stdout, &stderr); code != 0 {
		t.Errorf("exit status %d with one usable file, want 0: %s", code, stderr.String())
	}
	if code := run([]string{"-plots=false", filepath.Join(t.TempDir(), "missing.txt")}, &stdout, &stderr); code != 2 {
		t.Errorf("exit status %d for a missing file, want 2", code)
	}
	if code := run(nil, &stdout, &stderr); code != 2 {
		t.Errorf("exit status %d without arguments, want 2", code)
	}
}

// TestPlotsGoWhereAsked: the report writes its plots into results/plots
// of the directory it runs in, or -plotdir, never beside its inputs.
func TestPlotsGoWhereAsked(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "retpoline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "run.txt")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := run([]string{in}, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr.String())
	}
	own := filepath.Join(dir, "elsewhere")
	if code := run([]string{"-plotdir", own, in}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -plotdir: exit %d: %s", code, stderr.String())
	}
	for _, d := range []string{filepath.Join(dir, "results", "plots"), own} {
		if svgs, _ := filepath.Glob(filepath.Join(d, "*.svg")); len(svgs) == 0 {
			t.Errorf("no plot in %s", d)
		}
	}
	if beside, _ := filepath.Glob(filepath.Join(dir, "in", "*", "*.svg")); len(beside) != 0 {
		t.Errorf("plots beside the input: %v", beside)
	}
}
