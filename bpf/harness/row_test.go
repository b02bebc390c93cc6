package harness

import (
	"errors"
	"testing"

	"bpfbench/bpf/measure"
)

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
			rows = append(rows, SetupRow(b, name, func(tb testing.TB) measure.Row {
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
