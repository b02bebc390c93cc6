// Command anatomy makes and prints the anatomy of an instruction-counting
// run: per repetition of each row, what executed by kind (calls, returns,
// retpoline and return thunks, kCFI checks, fences), from what the QEMU
// plugin in tools/anatomy/plugin counted (docs/icount.md#anatomy).
//
//	make vmbench KERNEL=7.3 ANATOMY=1 BENCH='^BenchmarkXDP$'   # runs it
//	go run ./tools/anatomy -raw DIR -o run.anatomy run.txt       # what make runs
//	go run ./tools/anatomy -table a.anatomy [b.anatomy]          # a table; two files: B-A
//	go run ./tools/anatomy -matrix instrs/op results/*-boot-*.anatomy  # rows × boots
//
// Making an anatomy fails (exit 1, after writing the file) when a check
// fails: on a row the kernel's test_run loop times, the instructions per
// op disagree with its instrs/op in the results file by more than 1%, or
// an event kind is not a whole number per op; the A/A controls (BenchmarkXDP
// prog=aa, BenchmarkDispatcher dispatcher=aa) differ from their baseline,
// or the calibration (add64) is not 64 more plain instructions.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"bpfbench/results/anatomy"
	"bpfbench/results/benchfile"
)

func main() {
	raw := flag.String("raw", "", "the directory tools/vmexec wrote (VMEXEC_ANATOMY)")
	out := flag.String("o", "", "the anatomy file to write (default: the results file's name with .anatomy)")
	table := flag.Bool("table", false, "print the anatomy files given as a table; two files: B-A")
	matrix := flag.String("matrix", "", "print this `unit` (instrs/op, retthunks/op, ...) of the files given, one kernel's boots, as rows × boots")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: anatomy -raw DIR [-o OUT] RESULTS.txt\n       anatomy -table A.anatomy [B.anatomy]\n       anatomy -matrix UNIT FILES...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var err error
	switch {
	case *matrix != "" && flag.NArg() >= 1:
		err = printMatrix(flag.Args(), *matrix)
	case *table && flag.NArg() >= 1 && flag.NArg() <= 2:
		err = printTables(flag.Args())
	case *raw != "" && flag.NArg() == 1:
		err = build(*raw, *out, flag.Arg(0))
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "anatomy: %v\n", err)
		os.Exit(1)
	}
}

// build writes the anatomy of the run in raw, checks it, and prints its
// table.
func build(raw, out, results string) error {
	r, err := anatomy.ReadRaw(filepath.Join(raw, "plugin.txt"), filepath.Join(raw, "log.txt"))
	if err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(os.Stderr, "anatomy: %s\n", n)
	}
	rows := anatomy.Rows(r)
	if len(rows) == 0 {
		return fmt.Errorf("%s: no row's windows (was the run made with ANATOMY=1?)", raw)
	}
	config, err := anatomy.ConfigLines(results)
	if err != nil {
		return err
	}
	res, err := benchfile.Read(results)
	if err != nil {
		return err
	}
	if out == "" {
		out = strings.TrimSuffix(results, ".txt") + ".anatomy"
	}
	var buf bytes.Buffer
	if err := anatomy.Write(&buf, config, rows); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	f, err := benchfile.Parse(out, buf.Bytes())
	if err != nil {
		return err
	}
	fmt.Print(anatomy.Table(f, nil))
	bad, notes := anatomy.Checks(rows, res)
	for _, n := range notes {
		fmt.Fprintf(os.Stderr, "anatomy: note: %s\n", n)
	}
	for _, b := range bad {
		fmt.Fprintf(os.Stderr, "anatomy: FAIL %s\n", b)
	}
	fmt.Printf("anatomy: %d rows, written to %s; %d checks failed\n", len(rows), out, len(bad))
	if len(bad) > 0 {
		return fmt.Errorf("%d checks failed", len(bad))
	}
	return nil
}

// readAll reads the files at paths.
func readAll(paths []string) ([]*benchfile.File, error) {
	var files []*benchfile.File
	for _, p := range paths {
		f, err := benchfile.Read(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func printTables(paths []string) error {
	files, err := readAll(paths)
	if err != nil {
		return err
	}
	if len(files) == 1 {
		fmt.Print(anatomy.Table(files[0], nil))
		return nil
	}
	fmt.Print(anatomy.Table(files[1], files[0]))
	return nil
}

func printMatrix(paths []string, unit string) error {
	files, err := readAll(paths)
	if err != nil {
		return err
	}
	fmt.Print(anatomy.Matrix(files, unit))
	return nil
}
