package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bpfbench/results/internal/resultstest"
)

func TestDriftCommand(t *testing.T) {
	a, b := resultstest.DriftFiles(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", "-all", a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"cycles/op: 20 rows; shared shift +1.", "ns/op: 20 rows; shared shift -", "furthest from it: BenchmarkX/row=r7 +9.", "BenchmarkX/row=r7   +9."} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report -drift output lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "Verdicts") {
		t.Errorf("report -drift printed verdicts:\n%s", stdout.String())
	}
	if code := run([]string{"-drift", a}, &stdout, &stderr); code != 2 {
		t.Errorf("report -drift with one file: exit %d, want 2", code)
	}
}

// TestNoiseFloorCommand: the command takes the A/A pair from -aa and says which
// rows moved beyond the machine's noise (the floor itself:
// drift.TestNoiseFloor).
func TestNoiseFloorCommand(t *testing.T) {
	aaDir, a, b := resultstest.FloorFiles(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", "-aa", aaDir, a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "beyond the machine's noise") || !strings.Contains(out, "BEYOND THE NOISE") {
		t.Errorf("report -drift with an A/A pair says nothing of the noise:\n%s", out)
	}
	// Without the pair, no floor.
	stdout.Reset()
	if code := run([]string{"-drift", "-aa", filepath.Join(t.TempDir(), "none"), a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "no A/A pair of this machine") || strings.Contains(out, "BEYOND THE NOISE") {
		t.Errorf("report -drift without an A/A pair:\n%s", out)
	}
}

// TestExactCountsCommand: given two instruction-count files, -drift compares
// them as counts (the comparison itself: drift.TestExactCounts).
func TestExactCountsCommand(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "6.12.txt"), filepath.Join(dir, "7.3.txt")
	head := "virt: tcg-icount\nkernel: %s\n"
	rows := "BenchmarkTrampoline/target=xdp/attach=fentry/progs=1-2 1 %.1f instrs/op %.1f kernel-instrs/op\n" +
		"BenchmarkTrampoline/target=kfunc/attach=none/progs=0-2 1 %.1f instrs/op\n"
	if err := os.WriteFile(a, []byte(fmt.Sprintf(head+rows, "6.12", 214.2, 214.0, 10.0)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(fmt.Sprintf(head+rows, "7.3", 196.5, 196.0, 75.3)), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-drift", a, b}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -drift: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"instrs/op: 2 rows, 2 changed", "~ not exact"} {
		if !strings.Contains(out, want) {
			t.Errorf("exact comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "shared shift") || strings.Contains(out, "p=") {
		t.Errorf("exact comparison tests significance:\n%s", out)
	}
}

// TestUncontended: the runs with too few free calls are left out of
// what benchstat is given, of the shift and of the floor; the
// others stay, configuration lines too.
func TestUncontended(t *testing.T) {
	text := "cpu-family-model: 6/207\ncontention-rule: slower-with-reference\n" +
		"BenchmarkX/row=a-2 1 5.0 ns/op 0.50 contended-frac\n" +
		"BenchmarkX/row=a-2 1 9.0 ns/op 0.95 contended-frac\n" +
		"BenchmarkX/row=b-2 1 7.0 ns/op\n"
	path := resultstest.WriteFile(t, "x.txt", text)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-uncontended", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("report -uncontended: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	if strings.Contains(out, "9.0 ns/op") || !strings.Contains(out, "5.0 ns/op") || !strings.Contains(out, "row=b") || !strings.Contains(out, "cpu-family-model: 6/207") {
		t.Errorf("report -uncontended printed:\n%s", out)
	}
}

// TestGateCommand: -gate exits 0 when nothing regressed, 1 when something
// did, with a line per failing row, and 2 on a usage or read error; make
// compare fails with it.
func TestGateCommand(t *testing.T) {
	const (
		icountA  = "../20261201T150053Z-qemu-icount-7.3.4+deb13-cloud-amd64-icount-a.txt"
		icountB  = "../20261201T150733Z-qemu-icount-7.3.4+deb13-cloud-amd64-icount-b.txt"
		anat612  = "../20261204T192118Z-qemu-icount-6.12.118+deb13-cloud-amd64-anatomy.anatomy"
		anat73   = "../20261204T191813Z-qemu-icount-7.3.4+deb13-cloud-amd64-anatomy.anatomy"
		nonsense = "../no-such-file.txt"
	)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-gate", icountA, icountB}, 0, "gate: PASS"},
		{[]string{"-gate", anat612, anat73}, 1, "gate: FAIL BenchmarkTrampoline/target=helper/attach=fexit/progs=1 delta-calls-rets/op: delta-calls-rets disappeared"},
		{[]string{"-gate", icountA, nonsense}, 2, ""},
		{[]string{"-gate", icountA}, 2, ""},
		{[]string{"-gate", "-fail-on", "5", icountA, icountB}, 2, ""},
		{[]string{"-gate", icountA, anat73}, 2, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("report %s: exit %d, want %d; stdout lacks %q?\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, stdout.String(), stderr.String())
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	c := exec.Command("make", "--no-print-directory", "-C", "../..", "compare", "A=results/"+filepath.Base(anat612), "B=results/"+filepath.Base(anat73))
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "gate: FAIL") {
		t.Errorf("make compare of 6.12's and 7.3's anatomies: %v, want make's exit 2 and the gate's failure\n%s", err, out)
	}
}

// TestPassesLines: -passes, which make bench appends to every file, says
// which passes disagree and, on a line of its own, how many runs were left
// out because their paired base ran slow (the file of
// benchfile.TestSlowBaseRecorded).
func TestPassesLines(t *testing.T) {
	var stdout, stderr bytes.Buffer
	path := filepath.Join("..", "20261207T121528Z-vm-amd-26-2-6.18.44-fc-v1272-aa1.txt")
	if code := run([]string{"-passes", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "# passes: 1 of 6 passes disagree") || !strings.HasPrefix(lines[1], "# bases: 10 of 204 row-runs") {
		t.Errorf("-passes printed %q: want the pass left out, then the 10 runs whose base ran slow", lines)
	}
}
