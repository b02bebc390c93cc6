package anatomy

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
)

// kallsymsLines is the guest log's C record of a kernel with two functions.
func kallsymsLines(t *testing.T) string {
	t.Helper()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	fmt.Fprintf(zw, "ffffffff81000000 T loop\nffffffff81001000 T __x86_indirect_thunk_rax\n")
	zw.Close()
	return "C " + base64.StdEncoding.EncodeToString(z.Bytes()) + "\n"
}

// run writes a guest log and plugin output: one row whose variant runs,
// per repetition, a block of two instructions (call; ret) and one entry
// into the retpoline thunk, and whose baseline runs the block alone; each
// window also runs a fixed block of five NOPs once. Warm-up windows run
// the loop block an extra time, which only a window counted before the
// row's M record shows.
func run(t *testing.T, noise map[int]int) string {
	t.Helper()
	dir := t.TempDir()
	var log, plugin strings.Builder
	log.WriteString(kallsymsLines(t))
	log.WriteString("P\nF ffffffff81000000 6 bpf_prog_0123456789abcdef_drop\n")
	plugin.WriteString("B 0 ffffffff81000000 2 e800000000.c3\n")
	plugin.WriteString("B 1 ffffffff81001000 1 c3\n")
	plugin.WriteString("B 2 ffffffffc0000000 5 90.90.90.90.90\n")
	seq := 0
	window := func(row, stream string, repeat, loops, thunks int) {
		fmt.Fprintf(&log, "W %s %s %d kernel\n", row, stream, repeat)
		n := 2
		if thunks > 0 {
			n = 3
		}
		fmt.Fprintf(&plugin, "W %d %d 0\n0 %d\n2 1\n", seq, n, loops+noise[seq])
		if thunks > 0 {
			fmt.Fprintf(&plugin, "1 %d\n", thunks)
		}
		seq++
	}
	const row = "BenchmarkX/v=a"
	// Warm-up: one extra loop in the long call.
	window(row, "v", 2, 2, 2)
	window(row, "v", 100, 101, 100)
	fmt.Fprintf(&log, "M %s\n", row)
	for i := 0; i < 3; i++ {
		window(row, "v", 2, 2, 2)
		window(row, "v", 1000, 1000, 1000)
		window(row, "base", 2, 2, 0)
		window(row, "base", 1000, 1000, 0)
	}
	// A test's own call, outside every row.
	window("-", "-", 2, 2, 0)
	for name, text := range map[string]string{"log.txt": log.String(), "plugin.txt": plugin.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRows(t *testing.T) {
	// Window 7 (a long call of the variant) had a context switch's
	// blocks land in it: the median leaves it out.
	dir := run(t, map[int]int{7: 5000})
	r, err := ReadRaw(filepath.Join(dir, "plugin.txt"), filepath.Join(dir, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows := Rows(r)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	row := rows[0]
	if row.Pairs != 3 {
		t.Errorf("%d pairs, want the 3 measured ones", row.Pairs)
	}
	// Per repetition: the loop block (call, ret) and a thunk entry (its ret).
	want := map[Kind]float64{Instrs: 3, Calls: 1, Rets: 2, Retpolines: 1, BareRets: 1}
	for k := Kind(0); k < nKinds; k++ {
		if row.V[k] != want[k] {
			t.Errorf("variant %s = %v, want %v", k.Unit(), row.V[k], want[k])
		}
	}
	if row.Delta[Retpolines] != 1 || row.Delta[Instrs] != 1 || row.Delta[Calls] != 0 {
		t.Errorf("delta: retpolines %v instrs %v calls %v, want 1, 1, 0", row.Delta[Retpolines], row.Delta[Instrs], row.Delta[Calls])
	}
	if row.CallsMinusRets != -1 || row.V[BareRets] != 1 {
		t.Errorf("calls-rets = %v, bare-rets = %v, want -1 and 1 (the thunk's ret is not bare)", row.CallsMinusRets, row.V[BareRets])
	}
	if len(row.Top) == 0 || row.Top[0].Name != "bpf_prog_0123456789abcdef_drop" || row.Top[0].Instrs != 2 {
		t.Errorf("top = %v, want the program first with 2", row.Top)
	}
	if row.BPFInstrs != 2 {
		t.Errorf("BPF instructions per op %v, want the program's 2", row.BPFInstrs)
	}
	if bad := row.Check(); len(bad) != 0 {
		t.Errorf("Check: %v", bad)
	}
}

func TestReadRawCountsWindows(t *testing.T) {
	dir := run(t, nil)
	// A guest that logged a window the plugin never closed: the files
	// disagree, and nothing is made of them.
	f, err := os.OpenFile(filepath.Join(dir, "log.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "W BenchmarkX/v=a v 2 kernel\nW BenchmarkX/v=a v 2 kernel\n")
	f.Close()
	if _, err := ReadRaw(filepath.Join(dir, "plugin.txt"), filepath.Join(dir, "log.txt")); err == nil || !strings.Contains(err.Error(), "plugin counted") {
		t.Errorf("ReadRaw = %v, want the windows' counts to disagree", err)
	}
}

func TestCheckNoProgram(t *testing.T) {
	// Windows that counted the kernel's loop but no BPF program: a figure
	// of no program, on either timing.
	for _, timing := range []string{"kernel", "bpf_loop"} {
		r := Row{Name: "BenchmarkX/v=a", Timing: timing, BPFInstrs: 0}
		r.V[Instrs] = 95
		if bad := r.Check(); len(bad) != 1 || !strings.Contains(bad[0], "ran no program") {
			t.Errorf("%s: Check = %q, want it to say no program ran", timing, bad)
		}
	}
}

func TestCheckWholeNumbers(t *testing.T) {
	r := Row{Name: "BenchmarkX/v=a", Timing: "kernel", BPFInstrs: 10}
	r.V[Calls] = 1.07
	if bad := r.Check(); len(bad) != 1 || !strings.Contains(bad[0], "calls/op") {
		t.Errorf("Check = %v, want calls/op off a whole number", bad)
	}
	r.Timing = "bpf_loop"
	if bad := r.Check(); len(bad) != 0 {
		t.Errorf("a bpf_loop row: Check = %v, want nothing", bad)
	}
}

func TestChecksControls(t *testing.T) {
	res, err := benchfile.Parse("r.txt", []byte("BenchmarkXDP/prog=aa/size=64 1 95.4 instrs/op\nBenchmarkXDP/prog=add64/size=64 1 159.4 instrs/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	aa := Row{Name: "BenchmarkXDP/prog=aa/size=64", Timing: "kernel", HaveBase: true, BPFInstrs: 3}
	aa.V[Instrs], aa.Base[Instrs] = 95.1, 95.1
	add := Row{Name: "BenchmarkXDP/prog=add64/size=64", Timing: "kernel", HaveBase: true, BPFInstrs: 67}
	add.V[Instrs], add.Base[Instrs], add.Delta[Instrs] = 159.1, 95.1, 64
	if bad, _ := Checks([]Row{aa, add}, res); len(bad) != 0 {
		t.Errorf("controls that hold: %v", bad)
	}
	// An A/A control with a call its baseline lacks, a calibration one
	// instruction short, and a row far from its instrs/op.
	aa.Delta[Calls] = 1
	add.Delta[Instrs] = 63
	add.V[Instrs] = 170
	bad, _ := Checks([]Row{aa, add}, res)
	for _, want := range []string{"prog=aa/size=64: +1.000 calls/op", "prog=add64/size=64: +63.00 instructions", "170.00 instructions per op, the row's instrs/op is 159.40"} {
		if !strings.Contains(strings.Join(bad, "\n"), want) {
			t.Errorf("Checks = %q, want one saying %q", bad, want)
		}
	}
}

func TestChecksBPFLoopRows(t *testing.T) {
	res, err := benchfile.Parse("r.txt", []byte("BenchmarkT/target=helper 1 13.06 instrs/op\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := Row{Name: "BenchmarkT/target=helper", Timing: "bpf_loop", BPFInstrs: 12}
	r.V[Instrs] = 26
	bad, notes := Checks([]Row{r}, res)
	if len(bad) != 0 || len(notes) != 1 {
		t.Errorf("a bpf_loop row off its instrs/op: failures %q, notes %q; want one note", bad, notes)
	}
}

func TestWriteReadsBack(t *testing.T) {
	r := Row{Name: "BenchmarkX/v=a", HaveBase: true, Top: []Fn{{"loop", 2}}}
	r.V[Retpolines], r.Delta[Retpolines] = 1, 1
	var buf bytes.Buffer
	if err := Write(&buf, []string{"kernel: 7.3"}, []Row{r}); err != nil {
		t.Fatal(err)
	}
	f, err := benchfile.Parse("x.anatomy", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Label("kernel") != "7.3" || f.Label("anatomy") != "qemu-tcg-plugin" {
		t.Errorf("labels: kernel %q anatomy %q", f.Label("kernel"), f.Label("anatomy"))
	}
	if v := f.Runs["BenchmarkX/v=a"][0].Values["delta-retpolines/op"]; v != 1 {
		t.Errorf("delta-retpolines/op = %v, want 1", v)
	}
	if len(f.Warnings) != 0 {
		t.Errorf("warnings: %v", f.Warnings)
	}
	if table := Table(f, nil); !strings.Contains(table, "retpoline") {
		t.Errorf("table lacks the retpoline column:\n%s", table)
	}
}

func TestMatrix(t *testing.T) {
	a, _ := benchfile.Parse("a.txt", []byte("qemu-cpu: max\ncmdline-mitigations: none\nBenchmarkX/r=1 1 95 instrs/op\nBenchmarkX/r=2 1 97 instrs/op\n"))
	b, _ := benchfile.Parse("b.txt", []byte("qemu-cpu: EPYC-Milan\ncmdline-mitigations: none\nBenchmarkX/r=1 1 105.2 instrs/op\n"))
	got := Matrix([]*benchfile.File{a, b}, "instrs/op")
	want := "| row (instrs/op) | max none | EPYC-Milan none |\n|---|---:|---:|\n| `X/r=1` | 95.00 | 105.20 |\n| `X/r=2` | 97.00 | - |\n"
	if got != want {
		t.Errorf("Matrix:\n%s\nwant:\n%s", got, want)
	}
}
