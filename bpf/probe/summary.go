package probe

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The run's summary: what became of every sub-benchmark run through Run
// (measured, skipped and why, failed) and which measured rows were
// flagged (Flag), printed at the end of a run (WriteSummary) where a
// default run, without -v, otherwise says nothing of its skips.
var summary struct {
	sync.Mutex
	rows    []outcome
	reasons map[string]string   // skip reason by row name
	flags   map[string][]string // flags by row name
}

type outcome struct {
	name    string
	skipped bool
	failed  bool
}

// Run is b.Run(name, f) with its outcome recorded for the summary.
func Run(b *testing.B, name string, f func(b *testing.B)) bool {
	b.Helper()
	return b.Run(name, func(b *testing.B) {
		defer func() {
			o := outcome{name: b.Name(), skipped: b.Skipped(), failed: b.Failed()}
			summary.Lock()
			defer summary.Unlock()
			// testing calls the body of a row that uses neither b.N nor
			// b.Loop again as it ramps b.N (measure.Family's rows): one
			// row, its latest outcome.
			if n := len(summary.rows); n > 0 && summary.rows[n-1].name == o.name {
				summary.rows[n-1] = o
				return
			}
			summary.rows = append(summary.rows, o)
		}()
		f(b)
	})
}

// Skip skips tb saying why, and keeps the reason for the summary.
func Skip(tb testing.TB, reason string) {
	tb.Helper()
	summary.Lock()
	if summary.reasons == nil {
		summary.reasons = map[string]string{}
	}
	summary.reasons[tb.Name()] = reason
	// A family that skips before its rows (the kernel refuses what all
	// of them need) is one line of the summary, not none.
	if _, ok := tb.(*testing.B); ok && !strings.Contains(tb.Name(), "/") {
		summary.rows = append(summary.rows, outcome{name: tb.Name(), skipped: true})
	}
	summary.Unlock()
	tb.Skip(reason)
}

// Skipf is Skip with a formatted reason.
func Skipf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	Skip(tb, fmt.Sprintf(format, args...))
}

// Flag marks the measured row tb as one to read with care, saying why
// (such as "contended": too few of its calls ran free).
func Flag(tb testing.TB, why string) { FlagName(tb.Name(), why) }

// FlagName is Flag of the row of that full name.
func FlagName(name, why string) {
	summary.Lock()
	if summary.flags == nil {
		summary.flags = map[string][]string{}
	}
	if !slices.Contains(summary.flags[name], why) {
		summary.flags[name] = append(summary.flags[name], why)
	}
	summary.Unlock()
}

// WriteSummary prints the summary of the rows run so far, each line
// starting with "# " so that benchfmt and benchstat pass over it: how
// many were measured, the skipped ones grouped by reason, the failed and
// the flagged ones. It prints nothing when no row ran through Run.
func WriteSummary(w io.Writer) {
	summary.Lock()
	defer summary.Unlock()
	if len(summary.rows) == 0 {
		return
	}
	var measured int
	var failed []string
	skipped := map[string][]string{}
	for _, r := range summary.rows {
		switch {
		case r.skipped:
			why := cmp.Or(summary.reasons[r.name], "no reason recorded (run with -v to see it)")
			skipped[why] = append(skipped[why], r.name)
		case r.failed:
			failed = append(failed, r.name)
		default:
			measured++
		}
	}
	nskip := len(summary.rows) - measured - len(failed)
	fmt.Fprintf(w, "# bpfbench summary: %d rows measured, %d skipped, %d failed\n", measured, nskip, len(failed))
	reasons := slices.Sorted(func(yield func(string) bool) {
		for k := range skipped {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortStableFunc(reasons, func(a, b string) int { return len(skipped[b]) - len(skipped[a]) })
	for _, why := range reasons {
		names := skipped[why]
		fmt.Fprintf(w, "# skipped %d: %s\n", len(names), why)
		for _, line := range wrapNames(names) {
			fmt.Fprintf(w, "#     %s\n", line)
		}
	}
	for _, n := range failed {
		fmt.Fprintf(w, "# failed: %s\n", n)
	}
	flagged := slices.Sorted(func(yield func(string) bool) {
		for k := range summary.flags {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range flagged {
		fmt.Fprintf(w, "# flagged: %s: %s\n", n, strings.Join(summary.flags[n], "; "))
	}
}

// wrapNames lists names compactly: the names of one family after its
// first with the family's prefix left out, about 100 characters a line.
func wrapNames(names []string) []string {
	var lines []string
	var cur strings.Builder
	family := ""
	for _, n := range names {
		f, rest, _ := strings.Cut(n, "/")
		item := n
		if f == family && cur.Len() > 0 {
			item = rest
		}
		if cur.Len() > 0 && cur.Len()+len(item) > 100 {
			lines = append(lines, cur.String())
			cur.Reset()
			item = n
		}
		if cur.Len() > 0 {
			cur.WriteString(" ")
		}
		cur.WriteString(item)
		family = f
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// The run's diagnostics: figures that say how a row's headline figures
// were made (the clock rate, the kernel's own average, the calls measured
// again, the stolen time), kept apart from the benchmark lines, which
// carry what people compare. WriteDiagnostics prints them as benchmark
// lines of their own, for a companion file beside the results.
var diagnostics struct {
	sync.Mutex
	order []string
	rows  map[string][]diagnostic
}

type diagnostic struct {
	unit string
	v    float64
}

// Diagnose records a diagnostic of row tb.
func Diagnose(tb testing.TB, v float64, unit string) {
	diagnostics.Lock()
	defer diagnostics.Unlock()
	if diagnostics.rows == nil {
		diagnostics.rows = map[string][]diagnostic{}
	}
	name := tb.Name()
	if _, ok := diagnostics.rows[name]; !ok {
		diagnostics.order = append(diagnostics.order, name)
	}
	diagnostics.rows[name] = append(diagnostics.rows[name], diagnostic{unit, v})
}

// WriteDiagnostics prints one benchmark line per row that has
// diagnostics, in the order the rows ran, and forgets them. A row's last
// value of a unit wins, as in testing's own lines.
func WriteDiagnostics(w io.Writer) error {
	diagnostics.Lock()
	defer diagnostics.Unlock()
	for _, name := range diagnostics.order {
		var b strings.Builder
		fmt.Fprintf(&b, "%s 1", name)
		seen := map[string]float64{}
		var units []string
		for _, d := range diagnostics.rows[name] {
			if _, ok := seen[d.unit]; !ok {
				units = append(units, d.unit)
			}
			seen[d.unit] = d.v
		}
		slices.Sort(units)
		for _, u := range units {
			fmt.Fprintf(&b, "\t%g %s", seen[u], u)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	diagnostics.order, diagnostics.rows = nil, nil
	return nil
}
