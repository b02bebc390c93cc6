package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"bpfbench/results/benchfile"
)

// TestDocumentedCommands runs the cheap commands that README.md and
// results/README.md show (benchstat, make compare, make report,
// tools/icount-table, tools/matrix, tools/anatomy), as written, on
// committed files put in place of their placeholders: a documented
// command that fails, or a benchstat -col that compares nothing, fails
// here. The expensive ones (tests, benchmarks, guests) are CI's own.
func TestDocumentedCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make and go: not with -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const (
		older = "results/20261201T145938Z-qemu-icount-6.12.117+deb12-cloud-amd64-icount-a.txt"
		newer = "results/20261201T150053Z-qemu-icount-7.3.4+deb13-cloud-amd64-icount-a.txt"
		timed = "results/20261130T023010Z-vm-6.18.44-fc-v782-retpoline.txt"
	)
	placeholders := strings.NewReplacer(
		"results/...-before.txt", older, "results/...-after.txt", newer,
		"results/<old>.txt", older, "results/<new>.txt", newer,
		"results/<a>.txt", older, "results/<b>.txt", newer,
		" a.txt", " "+older, " b.txt", " "+newer,
		"results/<file>.txt", timed,
	)
	cheap := regexp.MustCompile(`^(go tool benchstat|make compare|make report|tools/icount-table|tools/matrix|go run \./tools/anatomy) `)
	var cmds []string
	for _, doc := range []string{"README.md", "results/README.md"} {
		f, err := os.Open(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		in := false
		for s.Scan() {
			line := s.Text()
			switch {
			case strings.HasPrefix(line, "```sh"):
				in = true
			case strings.HasPrefix(line, "```"):
				in = false
			case in && cheap.MatchString(line):
				cmd, _, _ := strings.Cut(line, " #")
				cmds = append(cmds, placeholders.Replace(strings.TrimSpace(cmd)))
			}
		}
		f.Close()
	}
	if len(cmds) < 6 {
		t.Fatalf("found %d cheap commands in the READMEs, want at least 6: %q", len(cmds), cmds)
	}
	for _, cmd := range cmds {
		if strings.HasPrefix(cmd, "make report") {
			cmd += " REPORTFLAGS=-plots=false" // no plots written into the tree
		}
		if strings.Contains(cmd, "<") {
			t.Errorf("%s: a placeholder this test does not know", cmd)
			continue
		}
		c := exec.Command("bash", "-c", cmd)
		c.Dir = root
		timer := time.AfterFunc(3*time.Minute, func() { c.Process.Kill() })
		out, err := c.CombinedOutput()
		timer.Stop()
		// make compare fails, as documented, where its gate finds B
		// regressed.
		var ee *exec.ExitError
		if err != nil && !(strings.HasPrefix(cmd, "make compare") && errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(string(out), "\ngate: FAIL: ")) {
			t.Errorf("%s: %v\n%s", cmd, err, out)
			continue
		}
		// benchstat -col KEY over two files must give a column each.
		if strings.HasPrefix(cmd, "go tool benchstat") && strings.Contains(cmd, "-col kernel") {
			side := false
			for line := range strings.Lines(string(out)) {
				side = side || (strings.Contains(line, "6.12.117") && strings.Contains(line, "7.3.4"))
			}
			if !side {
				t.Errorf("%s: does not put the two kernels side by side:\n%.600s", cmd, out)
			}
		}
	}
}

// TestMakeVariables: make help names the variables the README tells a
// user to set, FLAGS reaches every run of the suite, and make aa builds
// the suite once for both its runs, so the pair is of one commit.
func TestMakeVariables(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(args ...string) string {
		t.Helper()
		c := exec.Command("make", append([]string{"--no-print-directory", "-C", root}, args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	help := mk("help")
	for _, v := range []string{"COUNT=", "BENCH=", "LABEL=", "FLAGS=", "KERNEL=", "ICOUNT=", "ANATOMY=", "VMEXEC_CMDLINE=", "BOOTS="} {
		if !strings.Contains(help, "  "+v) {
			t.Errorf("make help does not list %s:\n%s", v, help)
		}
	}
	const flag = "-bpfbench.cpu=1"
	for _, target := range []string{"bench", "smoke", "vmbench"} {
		// VMACCEL named: choosing it boots a guest, even under -n.
		if out := mk("-n", target, "FLAGS="+flag, "KERNEL=7.3", "VMACCEL=tcg"); !strings.Contains(out, flag) {
			t.Errorf("make -n %s FLAGS=%s: the flag reaches no command:\n%s", target, flag, out)
		}
	}
	aa := mk("-n", "aa", "FLAGS="+flag)
	if n := strings.Count(aa, "go test -c"); n != 1 {
		t.Errorf("make -n aa builds the suite %d times, want once:\n%s", n, aa)
	}
	if n := strings.Count(aa, ".cache/bench/bench.test -test.run"); n != 2 {
		t.Errorf("make -n aa runs the built suite in %d loops, want 2:\n%s", n, aa)
	}
}

// TestMakeBenchProgress: make bench says on stderr, between its passes,
// where it is and how long is left, and the results file has none of it
// and reads as results.
func TestMakeBenchProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make and the suite: not with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the suite's benchmarks: as root (go test -exec sudo)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	result := filepath.Join(dir, "progress.txt")
	c := exec.Command("make", "--no-print-directory", "-C", root, "bench", "COUNT=2", "BENCH=^BenchmarkXDP$$",
		"BENCHTIME=100x", "RESULT="+result, "BENCHBIN="+filepath.Join(dir, "bench.test"),
		"FLAGS=-bpfbench.lockwait=10m -bpfbench.layouts=1")
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("make bench: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"make bench run: pass 1 of 2", "make bench run: pass 2 of 2, ", " left", "make bench run: 2 of 2 done in "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("make bench's stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	data, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "make bench") {
		t.Errorf("the results file holds progress lines:\n%s", data)
	}
	f, err := benchfile.Parse(result, data)
	if err != nil {
		t.Fatal(err)
	}
	if runs := len(f.Runs["BenchmarkXDP/prog=drop/size=64"]); runs != 2 || len(f.Warnings) > 0 {
		t.Errorf("the results file has %d runs of XDP drop, want 2, and warnings %q", runs, f.Warnings)
	}
}
