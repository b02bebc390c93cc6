package probe

import (
	"strings"
	"testing"
)

// TestSummaryCountsARowOnce runs a row whose body uses neither b.N nor
// b.Loop, as measure.Family's rows are: testing calls such a body again
// as it ramps b.N, and the summary must still count one row, with each of
// its flags once.
func TestSummaryCountsARowOnce(t *testing.T) {
	was := summary.rows
	summary.rows, summary.flags = nil, nil
	defer func() { summary.rows, summary.flags = was, nil }()

	calls := 0
	testing.Benchmark(func(b *testing.B) {
		Run(b, "row", func(b *testing.B) {
			calls++
			Flag(b, "contended")
			b.ReportMetric(1, "ns/op")
		})
	})
	if calls < 2 {
		t.Skipf("testing called the row's body %d time(s): nothing to count twice", calls)
	}
	var out strings.Builder
	WriteSummary(&out)
	t.Logf("body called %d times; summary:\n%s", calls, out.String())
	if !strings.Contains(out.String(), "# bpfbench summary: 1 rows measured, 0 skipped, 0 failed\n") {
		t.Errorf("the summary does not count the row once:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "contended"); n != 1 {
		t.Errorf("the row's flag appears %d times, want 1:\n%s", n, out.String())
	}
}

// TestSummaryNamesASkippedFamily: a family that skips before any of its
// rows ran is in the summary, with its reason.
func TestSummaryNamesASkippedFamily(t *testing.T) {
	was, reasons := summary.rows, summary.reasons
	summary.rows, summary.reasons = nil, nil
	defer func() { summary.rows, summary.reasons = was, reasons }()

	testing.Benchmark(func(b *testing.B) { Skip(b, "the host refuses the family") })
	var out strings.Builder
	WriteSummary(&out)
	if !strings.Contains(out.String(), "0 rows measured, 1 skipped") || !strings.Contains(out.String(), "# skipped 1: the host refuses the family") {
		t.Errorf("the summary does not name the skipped family:\n%s", out.String())
	}
}
