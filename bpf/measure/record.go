package measure

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"bpfbench/bpf/probe"
)

// A Record is a run's record: what became of every row run through it
// (measured, skipped and why, failed), which measured rows were flagged
// and why, and each row's diagnostics. The run owns it (the suite's
// TestMain) and hands it to the engine in BenchOptions.Record; the
// summary it writes at the end says what a default run, without -v,
// otherwise says nothing of. A nil *Record records nothing.
type Record struct {
	mu      sync.Mutex
	rows    []outcome
	reasons map[string]string   // skip reason by row name
	flags   map[string][]string // flags by row name
	order   []string            // rows with diagnostics, in the order they ran
	diag    map[string][]diagnostic
}

type outcome struct {
	name    string
	skipped bool
	failed  bool
}

type diagnostic struct {
	unit string
	v    float64
}

// Run is b.Run(name, f) with its outcome recorded for the summary.
func (r *Record) Run(b *testing.B, name string, f func(b *testing.B)) bool {
	b.Helper()
	return b.Run(name, func(b *testing.B) {
		defer func() { r.outcome(outcome{name: b.Name(), skipped: b.Skipped(), failed: b.Failed()}) }()
		f(b)
	})
}

func (r *Record) outcome(o outcome) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// testing calls the body of a row that uses neither b.N nor b.Loop
	// again as it ramps b.N (Family's rows): one row, its latest outcome.
	if n := len(r.rows); n > 0 && r.rows[n-1].name == o.name {
		r.rows[n-1] = o
		return
	}
	r.rows = append(r.rows, o)
}

// Skip skips tb saying why, and keeps the reason for the summary.
func (r *Record) Skip(tb testing.TB, why string) {
	tb.Helper()
	if r != nil {
		r.mu.Lock()
		if r.reasons == nil {
			r.reasons = map[string]string{}
		}
		r.reasons[tb.Name()] = why
		r.mu.Unlock()
		// A family that skips before its rows (the kernel refuses what
		// all of them need) is one line of the summary, not none.
		if _, ok := tb.(*testing.B); ok && !strings.Contains(tb.Name(), "/") {
			r.outcome(outcome{name: tb.Name(), skipped: true})
		}
	}
	tb.Skip(why)
}

// Skipf is Skip with a formatted reason.
func (r *Record) Skipf(tb testing.TB, format string, args ...any) {
	tb.Helper()
	r.Skip(tb, fmt.Sprintf(format, args...))
}

// Require skips tb by the skip rule (probe.SkipReason), keeping the
// reason, and fails it on any other error.
func (r *Record) Require(tb testing.TB, err error, doing string) {
	tb.Helper()
	if err == nil {
		return
	}
	if why := probe.SkipReason(err, doing); why != "" {
		r.Skip(tb, why)
	}
	tb.Fatalf("%s: %v", doing, err)
}

// Flag marks the measured row of that full name as one to read with
// care, saying why (such as "contended": too few of its calls ran free).
func (r *Record) Flag(name, why string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flags == nil {
		r.flags = map[string][]string{}
	}
	if !slices.Contains(r.flags[name], why) {
		r.flags[name] = append(r.flags[name], why)
	}
}

// Diagnose records a diagnostic of the row of that full name: a figure
// that says how its headline figures were made (the clock rate, the
// kernel's own average, the calls measured again, the stolen time), kept
// apart from the benchmark lines, which carry what people compare.
func (r *Record) Diagnose(name string, v float64, unit string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.diag == nil {
		r.diag = map[string][]diagnostic{}
	}
	if _, ok := r.diag[name]; !ok {
		r.order = append(r.order, name)
	}
	r.diag[name] = append(r.diag[name], diagnostic{unit, v})
}

// WriteSummary prints the summary of the rows run so far, each line
// starting with "# " so that benchfmt and benchstat pass over it: how
// many were measured, the skipped ones grouped by reason, the failed and
// the flagged ones. It prints nothing when no row ran through Run.
func (r *Record) WriteSummary(w io.Writer) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return
	}
	var measured int
	var failed []string
	skipped := map[string][]string{}
	for _, o := range r.rows {
		switch {
		case o.skipped:
			why := cmp.Or(r.reasons[o.name], "no reason recorded (run with -v to see it)")
			skipped[why] = append(skipped[why], o.name)
		case o.failed:
			failed = append(failed, o.name)
		default:
			measured++
		}
	}
	nskip := len(r.rows) - measured - len(failed)
	fmt.Fprintf(w, "# bpfbench summary: %d rows measured, %d skipped, %d failed\n", measured, nskip, len(failed))
	reasons := slices.Sorted(maps.Keys(skipped))
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
	for _, n := range slices.Sorted(maps.Keys(r.flags)) {
		fmt.Fprintf(w, "# flagged: %s: %s\n", n, strings.Join(r.flags[n], "; "))
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

// WriteDiagnostics prints one benchmark line per row that has
// diagnostics, in the order the rows ran, and forgets them. A row's last
// value of a unit wins, as in testing's own lines.
func (r *Record) WriteDiagnostics(w io.Writer) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.order {
		var b strings.Builder
		fmt.Fprintf(&b, "%s 1", name)
		last := map[string]float64{}
		for _, d := range r.diag[name] {
			last[d.unit] = d.v
		}
		for _, u := range slices.Sorted(maps.Keys(last)) {
			fmt.Fprintf(&b, "\t%g %s", last[u], u)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	r.order, r.diag = nil, nil
	return nil
}
