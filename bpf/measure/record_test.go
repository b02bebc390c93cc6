package measure

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"bpfbench/bpf/probe"

	"github.com/cilium/ebpf"
)

// TestRecordCountsARowOnce runs a row whose body uses neither b.N nor
// b.Loop, as Family's rows are: testing calls such a body again as it
// ramps b.N, and the summary must still count one row, with each of its
// flags once.
func TestRecordCountsARowOnce(t *testing.T) {
	// testing ramps b.N, calling the body again, unless -benchtime is a
	// count of 1.
	f := flag.Lookup("test.benchtime")
	old := f.Value.String()
	if err := f.Value.Set("100x"); err != nil {
		t.Fatal(err)
	}
	defer f.Value.Set(old)
	var rec Record
	calls := 0
	testing.Benchmark(func(b *testing.B) {
		rec.Run(b, "row", func(b *testing.B) {
			calls++
			rec.Flag(b.Name(), "contended")
			b.ReportMetric(1, "ns/op")
		})
	})
	if calls < 2 {
		t.Fatalf("testing called the row's body %d time(s) at -benchtime 100x: nothing to count twice", calls)
	}
	var out strings.Builder
	rec.WriteSummary(&out)
	t.Logf("body called %d times; summary:\n%s", calls, out.String())
	if !strings.Contains(out.String(), "# bpfbench summary: 1 rows measured, 0 skipped, 0 failed\n") {
		t.Errorf("the summary does not count the row once:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "contended"); n != 1 {
		t.Errorf("the row's flag appears %d times, want 1:\n%s", n, out.String())
	}
}

// TestRecordNamesASkippedFamily: a family that skips before any of its
// rows ran is in the summary, with its reason; so is a row whose setup
// failed for want of a feature, by the skip rule.
func TestRecordNamesASkippedFamily(t *testing.T) {
	var family, row Record
	testing.Benchmark(func(b *testing.B) { family.Skip(b, "the host refuses the family") })
	testing.Benchmark(func(b *testing.B) {
		row.Run(b, "row", func(b *testing.B) {
			row.Require(b, fmt.Errorf("kfunc: %w", ebpf.ErrNotSupported), "set up")
		})
	})
	for _, c := range []struct {
		rec  *Record
		want string
	}{
		{&family, "# skipped 1: the host refuses the family"},
		{&row, "# skipped 1: set up: this kernel lacks the feature: kfunc: " + ebpf.ErrNotSupported.Error()},
	} {
		var out strings.Builder
		c.rec.WriteSummary(&out)
		if !strings.Contains(out.String(), "0 rows measured, 1 skipped") || !strings.Contains(out.String(), c.want) {
			t.Errorf("the summary lacks %q:\n%s", c.want, out.String())
		}
	}
	if probe.SkipReason(errors.New("EINVAL"), "x") != "" {
		t.Error("the skip rule skips an error that is neither missing nor refused")
	}
}

// TestRecordDiagnostics: a row's last value of a unit wins, rows come in
// the order they ran, and writing forgets them.
func TestRecordDiagnostics(t *testing.T) {
	var rec Record
	rec.Diagnose("B/b", 1, "steal-frac")
	rec.Diagnose("B/a", 2, "core-ghz")
	rec.Diagnose("B/b", 3, "steal-frac")
	var out strings.Builder
	if err := rec.WriteDiagnostics(&out); err != nil {
		t.Fatal(err)
	}
	if want := "B/b 1\t3 steal-frac\nB/a 1\t2 core-ghz\n"; out.String() != want {
		t.Errorf("diagnostics:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	rec.WriteDiagnostics(&out)
	if out.Len() != 0 {
		t.Errorf("diagnostics written twice: %q", out.String())
	}
}
