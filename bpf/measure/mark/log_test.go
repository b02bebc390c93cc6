package mark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLog(t *testing.T) {
	old := path
	path = filepath.Join(t.TempDir(), "log.txt")
	t.Cleanup(func() { path = old })

	Stream("BenchmarkX/a=1", "v")
	Log(t, 2, KernelLoop)
	Open()
	Close()
	Measured("BenchmarkX/a=1")
	Stream("BenchmarkX/a=1", "base")
	Log(t, 1000, BPFLoop)
	Stream("", "")
	Log(t, 2, KernelLoop)
	if err := Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var records []string
	kinds := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		kind, _, _ := strings.Cut(l, " ")
		kinds[kind]++
		if kind == "W" || kind == "M" {
			records = append(records, l)
		}
	}
	want := []string{
		"W BenchmarkX/a=1 v 2 kernel",
		"M BenchmarkX/a=1",
		"W BenchmarkX/a=1 base 1000 bpf_loop",
		"W - - 2 kernel",
	}
	if strings.Join(records, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(records, "\n"), strings.Join(want, "\n"))
	}
	// The kernel's symbols once (C, or E where kallsyms is unreadable),
	// those of modules and BPF images once per row (S), the programs
	// once per loop (P: one key here).
	if kinds["C"] == 0 && kinds["E"] == 0 {
		t.Errorf("no kernel symbols logged: %v", kinds)
	}
	if kinds["S"] != 2 || kinds["P"] != 1 {
		t.Errorf("S %d times (want 2: a row and the test's own calls), P %d times (want 1)", kinds["S"], kinds["P"])
	}
	// Flushed: a second Flush writes nothing more.
	if err := Flush(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); len(again) != len(data) {
		t.Errorf("a second Flush wrote %d bytes more", len(again)-len(data))
	}
}

func TestDisabled(t *testing.T) {
	old := path
	path = ""
	t.Cleanup(func() { path = old })
	Log(t, 2, KernelLoop)
	if err := Flush(); err != nil {
		t.Fatal(err)
	}
	if Enabled() {
		t.Error("enabled without a path")
	}
}
