package mark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.txt")
	l := New(path)
	l.Stream("BenchmarkX/a=1", "v")
	l.Next(t, 2, KernelLoop)
	Open()
	Close()
	l.Measured("BenchmarkX/a=1")
	l.Stream("BenchmarkX/a=1", "base")
	l.Next(t, 1000, BPFLoop)
	l.Stream("", "")
	l.Next(t, 2, KernelLoop)
	if err := l.Flush(); err != nil {
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
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); len(again) != len(data) {
		t.Errorf("a second Flush wrote %d bytes more", len(again)-len(data))
	}
}

// TestDisabled: without a path there is no log, and logging to none is
// a no-op.
func TestDisabled(t *testing.T) {
	l := New("")
	if l != nil {
		t.Fatal("a log without a path")
	}
	l.Stream("BenchmarkX/a=1", "v")
	l.Next(t, 2, KernelLoop)
	l.Measured("BenchmarkX/a=1")
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
}
