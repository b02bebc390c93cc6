package bench

import (
	"errors"
	"fmt"
	"testing"

	"bpfbench/bpf/measure"
)

// setupRow sets up the row name of the family benchmark b with setup,
// which may use the testing.TB it is given as a row's own sub-benchmark
// would: its Skip and Fatal end the setup and become the row's Skip and
// Err (measure.Row), reported in the row's sub-benchmark, and its
// Cleanups are the family's, so that what it attaches stays attached
// while the family measures its rows together.
func setupRow(b *testing.B, name string, setup func(tb testing.TB) measure.Row) (row measure.Row) {
	b.Helper()
	tb := &rowTB{TB: b, name: b.Name() + "/" + name}
	defer func() {
		tb.done = true
		if v := recover(); v != nil {
			if _, ok := v.(rowStop); !ok {
				panic(v)
			}
		}
		switch {
		case tb.err != nil:
			row = measure.Row{Err: tb.err}
		case tb.skip != "":
			row = measure.Row{Skip: tb.skip}
		}
		row.Name = name
	}()
	return setup(tb)
}

// rowTB is the testing.TB of a row's setup (setupRow). Once the setup is
// done, what its cleanups report goes to the family's benchmark.
type rowTB struct {
	testing.TB
	name string
	skip string
	err  error
	done bool
}

// rowStop ends a row's setup at a Skip or a Fatal.
type rowStop struct{}

func (t *rowTB) Name() string  { return t.name }
func (t *rowTB) Failed() bool  { return t.err != nil || (t.done && t.TB.Failed()) }
func (t *rowTB) Skipped() bool { return t.skip != "" }

func (t *rowTB) Fail() {
	if t.done {
		t.TB.Fail()
		return
	}
	if t.err == nil {
		t.err = errors.New("failed")
	}
}

func (t *rowTB) Error(args ...any) {
	if t.done {
		t.TB.Error(args...)
		return
	}
	t.err = errors.Join(t.err, errors.New(fmt.Sprint(args...)))
}

func (t *rowTB) Errorf(format string, args ...any) { t.Error(fmt.Sprintf(format, args...)) }

func (t *rowTB) FailNow() {
	if t.done {
		t.TB.FailNow()
	}
	t.Fail()
	panic(rowStop{})
}

func (t *rowTB) Fatal(args ...any) {
	t.Error(args...)
	t.FailNow()
}

func (t *rowTB) Fatalf(format string, args ...any) { t.Fatal(fmt.Sprintf(format, args...)) }

func (t *rowTB) SkipNow() { t.Skip("skipped") }

func (t *rowTB) Skip(args ...any) {
	if t.done {
		t.TB.Skip(args...)
	}
	t.skip = fmt.Sprint(args...)
	panic(rowStop{})
}

func (t *rowTB) Skipf(format string, args ...any) { t.Skip(fmt.Sprintf(format, args...)) }

// TestSetupRow sets up rows as a family does: a setup that skips or fails
// becomes a row that says why, one that succeeds is its row, and every
// cleanup registered through the rows' TB runs once the family's
// benchmark ends, not when its row's setup returns.
func TestSetupRow(t *testing.T) {
	var rows []measure.Row
	var cleaned []string
	ranSetup := false
	testing.Benchmark(func(b *testing.B) {
		rows, cleaned, ranSetup = nil, nil, false
		for _, name := range []string{"ok", "skip", "fatal", "error"} {
			rows = append(rows, setupRow(b, name, func(tb testing.TB) measure.Row {
				tb.Cleanup(func() { cleaned = append(cleaned, name) })
				switch name {
				case "skip":
					tb.Skipf("no %s here", "feature")
				case "fatal":
					tb.Fatalf("attach: %v", errors.New("EBUSY"))
				case "error":
					tb.Error("first")
					tb.Error("second")
					return measure.Row{Name: "ignored"}
				}
				ranSetup = true
				return measure.Row{Name: "ignored"}
			}))
		}
		if len(cleaned) != 0 {
			t.Errorf("cleanups ran during the setups: %v", cleaned)
		}
	})
	if !ranSetup {
		t.Fatal("the successful setup did not run to its end")
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for i, name := range []string{"ok", "skip", "fatal", "error"} {
		if rows[i].Name != name {
			t.Errorf("row %d is named %q, want %q", i, rows[i].Name, name)
		}
	}
	if rows[0].Skip != "" || rows[0].Err != nil {
		t.Errorf("row ok: skip %q, err %v; want neither", rows[0].Skip, rows[0].Err)
	}
	if rows[1].Skip != "no feature here" || rows[1].Err != nil {
		t.Errorf("row skip: skip %q, err %v; want the reason", rows[1].Skip, rows[1].Err)
	}
	if rows[2].Err == nil || rows[2].Err.Error() != "attach: EBUSY" {
		t.Errorf("row fatal: err %v, want attach: EBUSY", rows[2].Err)
	}
	if rows[3].Err == nil || rows[3].Err.Error() != "first\nsecond" {
		t.Errorf("row error: err %v, want both errors", rows[3].Err)
	}
	if len(cleaned) != 4 {
		t.Errorf("cleanups run after the benchmark: %v, want all four", cleaned)
	}
}
