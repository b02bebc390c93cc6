package measure

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"bpfbench/bpf/measure/runlog"
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
	diag    map[string][]runlog.Figure
}

type outcome struct {
	name    string
	skipped bool
	failed  bool
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
		r.diag = map[string][]runlog.Figure{}
	}
	if _, ok := r.diag[name]; !ok {
		r.order = append(r.order, name)
	}
	r.diag[name] = append(r.diag[name], runlog.Figure{Unit: unit, Value: v})
}

// WriteSummary prints the summary of the rows run so far (runlog.Summary).
func (r *Record) WriteSummary(w io.Writer) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := make([]runlog.Row, len(r.rows))
	for i, o := range r.rows {
		rows[i] = runlog.Row{Name: o.name, Skipped: o.skipped, Failed: o.failed, Why: r.reasons[o.name]}
	}
	runlog.Summary(w, rows, r.flags)
}

// WriteDiagnostics prints one benchmark line per row that has
// diagnostics, in the order the rows ran (runlog.Diagnostics), and
// forgets them.
func (r *Record) WriteDiagnostics(w io.Writer) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := runlog.Diagnostics(w, r.order, r.diag)
	r.order, r.diag = nil, nil
	return err
}
