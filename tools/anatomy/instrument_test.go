package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"bpfbench/results/anatomy"
	"bpfbench/results/benchfile"
)

// TestInstrument builds the plugin and the suite's benchmarks, counts
// one row, BenchmarkXDP's calibration (add64, measured against drop), in
// an instruction-counting guest of one kernel, and makes its anatomy,
// which must pass every check: instructions within 1% of the row's own
// instrs/op, whole events, and the calibration's 64 more plain
// instructions and nothing else. It needs QEMU and a kernel (make vmdeps
// kernels); ANATOMY_KERNEL names one (default: .cache/kernels/7.3), and
// ANATOMY_REQUIRE=1 makes a missing one a failure, as in CI.
func TestInstrument(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	kernel := os.Getenv("ANATOMY_KERNEL")
	if kernel == "" {
		kernel = filepath.Join(root, ".cache/kernels/7.3/vmlinuz")
	}
	missing := func(why string) {
		if os.Getenv("ANATOMY_REQUIRE") == "1" {
			t.Fatalf("%s (ANATOMY_REQUIRE=1)", why)
		}
		t.Skipf("%s: make vmdeps kernels", why)
	}
	if _, err := os.Stat(kernel); err != nil {
		missing("no kernel at " + kernel)
	}
	for _, tool := range []string{"qemu-system-x86_64", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing("no " + tool)
		}
	}
	if testing.Short() {
		t.Skip("boots a guest: not with -short")
	}
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "anatomy.so")
	command(t, root, nil, "cc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", plugin, "tools/anatomy/plugin/anatomy.c")
	bin := filepath.Join(tmp, "bench.test")
	command(t, root, []string{"CGO_ENABLED=0"}, "go", "test", "-c", "-o", bin, "./bench")
	raw := filepath.Join(tmp, "raw")
	env := []string{"KERNEL=" + kernel, "VMEXEC_ICOUNT=0", "VMEXEC_ANATOMY=" + raw, "VMEXEC_ANATOMY_PLUGIN=" + plugin}
	out := command(t, filepath.Join(root, "bench"), env, filepath.Join(root, "tools/vmexec"), bin,
		"-test.run=^$", "-test.bench=^BenchmarkXDP$/^prog=add64/size=64$", "-test.benchtime=100ms", "-test.v")
	results := filepath.Join(tmp, "run.txt")
	if err := os.WriteFile(results, out, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmp, "run.anatomy")
	if err := build(raw, file, results); err != nil {
		t.Fatalf("anatomy of the calibration row: %v\n%s", err, out)
	}
	f, err := benchfile.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	runs := f.Runs["BenchmarkXDP/prog=add64/size=64"]
	if len(runs) != 1 {
		t.Fatalf("the anatomy has %d runs of the calibration row, want 1:\n%s", len(runs), anatomy.Table(f, nil))
	}
	// build checked the counts; these say the file carries them.
	v := runs[0].Values
	if d := v["delta-instrs/op"]; d < 63.5 || d > 64.5 {
		t.Errorf("delta-instrs/op %v, want 64", d)
	}
	if v["instrs/op"] < 64 || v["delta-calls/op"] != 0 {
		t.Errorf("instrs/op %v, delta-calls/op %v", v["instrs/op"], v["delta-calls/op"])
	}
}

// command runs name in dir and returns its standard output, failing the
// test with its output when it fails.
func command(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}
