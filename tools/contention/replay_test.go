package main

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/bpf/measure/gauge"
	"bpfbench/bpf/measure/robust"

	"github.com/aclements/go-moremath/stats"
)

// A want is what the judge must do with a recorded trace. A call is slow
// when it cost more than slow times the median of the trace's fastest
// tenth: in the valley between the free and the contended costs where
// the trace has two modes (1.1 on the AMD EPYC 26/2 VM), 1.2 where it
// has one, as the Intel traces were counted when recorded
// (testdata/README.md).
type want struct {
	file string
	slow float64
	// quiet: no -load. At most the slow share and a tenth more flagged,
	// and the negative control.
	quiet bool
	// loaded: a -load trace, or one recorded beside a neighbour on the
	// host. The share flagged between 0.8 times the slow share and that
	// share plus 0.15, and the kept calls' median within 3% of the free
	// calls' of the load's off periods.
	loaded bool
}

var wants = []want{
	{file: "intel-6-167-quiet.csv.gz", slow: 1.2, quiet: true},
	{file: "intel-6-167-load-memory.csv.gz", slow: 1.2, loaded: true},
	{file: "intel-6-167-load-spread.csv.gz", slow: 1.2, loaded: true},
	{file: "amd-26-2-quiet.csv.gz", slow: 1.1, quiet: true},
	{file: "amd-26-2-host-busy.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-load-memory.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-load-spread.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-v1272-quiet.csv.gz", slow: 1.2, quiet: true},
	{file: "amd-26-2-v1272-load-memory-2s.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-v1272-load-memory-5s.csv.gz", slow: 1.2, loaded: true},
	{file: "amd-26-2-v1272-load-spread.csv.gz", slow: 1.2, loaded: true},
	{file: "amd-26-2-v1272-b-load-memory-2s.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-v1272-b-load-memory-5s.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-v1272-b-load-spread.csv.gz", slow: 1.1, loaded: true},
}

// TestReplay replays each recorded trace through the suite's judge and
// fails when it keeps slow calls or flags free ones, or when the calls
// it keeps are not the free ones' level; and, on a quiet trace with only
// the program's cost raised in stretches, when it flags the raised calls:
// a judge that flags a call because it was slow is an outlier filter.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/*.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wants {
		if !slices.Contains(files, filepath.Join("testdata", w.file)) {
			t.Errorf("%s: no such trace in testdata", w.file)
		}
	}
	if len(files) != len(wants) {
		t.Errorf("%d traces in testdata, %d judged: give each a want", len(files), len(wants))
	}
	for _, w := range wants {
		t.Run(w.file, func(t *testing.T) {
			tr, err := readTrace(filepath.Join("testdata", w.file))
			if err != nil {
				t.Fatal(err)
			}
			v := tr.judge()
			t.Log(tr.summary(v))
			slow := tr.slowCalls(w.slow)
			all, slowF, othersF := shares(v.Contended, slow)
			nslow, _ := count(slow, slow)
			share := float64(nslow) / float64(len(slow))
			t.Logf("%d calls, %d slow (over %.1fx the fastest tenth): %.3f of them flagged, %.3f of the others", len(slow), nslow, w.slow, slowF, othersF)
			if w.quiet && all > share+0.10 {
				t.Errorf("flagged %.3f of a quiet trace's calls, of which %.3f were slow: want at most a tenth more", all, share)
			}
			if w.loaded {
				if all < 0.8*share || all > share+0.15 {
					t.Errorf("flagged %.3f of the calls, %.3f of them slow: want between 0.8 times that and 0.15 more", all, share)
				}
				kept, off := tr.keptMedian(v), tr.offMedian(slow)
				t.Logf("kept calls' median %.2f, the load-off free calls' %.2f", kept, off)
				if math.Abs(kept/off-1) > 0.03 {
					t.Errorf("the kept calls' median %.2f is %+.1f%% off the load-off free calls' %.2f: want within 3%%", kept, 100*(kept/off-1), off)
				}
			}
			if !w.quiet {
				return
			}
			// The negative control: the program's cost raised in
			// stretches, the references as they were. Of the raised calls
			// the judge kept, it may flag few.
			c := tr.slowed()
			cv := c.judge()
			kept := c.raised()
			for i, f := range v.Contended {
				kept[i] = kept[i] && !f
			}
			_, keptF, _ := shares(cv.Contended, kept)
			_, raisedF, _ := shares(cv.Contended, c.raised())
			t.Logf("negative control: %s; %.3f of the raised calls flagged, %.3f of those kept before", c.summary(cv), raisedF, keptF)
			if keptF > 0.10 {
				t.Errorf("negative control: flagged %.3f of the calls whose cost alone was raised, want at most 0.10", keptF)
			}
		})
	}
}

// keptMedian is the median cost of the calls v keeps.
func (t trace) keptMedian(v gauge.Decision) float64 {
	var xs []float64
	for i, c := range t.calls {
		if !v.Contended[i] {
			xs = append(xs, c.Cost)
		}
	}
	return stats.Sample{Xs: xs}.Quantile(0.5)
}

// offMedian is the median cost of the calls made while the load was off
// and not slow: where a neighbour on the host slowed the off periods too,
// their median is that neighbour's, not the free core's.
func (t trace) offMedian(slow []bool) float64 {
	var xs []float64
	for i, c := range t.calls {
		if !t.on[i] && !slow[i] {
			xs = append(xs, c.Cost)
		}
	}
	return stats.Sample{Xs: xs}.Quantile(0.5)
}

// shares is the share of all calls flagged, of those in pick, and of
// the others.
func shares(flagged, pick []bool) (all, picked, others float64) {
	var n, np, no, fp, fo int
	for i, f := range flagged {
		if pick[i] {
			np++
		} else {
			no++
		}
		if !f {
			continue
		}
		n++
		if pick[i] {
			fp++
		} else {
			fo++
		}
	}
	frac := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	return frac(n, len(flagged)), frac(fp, np), frac(fo, no)
}

// TestParseTrace: a trace's header is checked, its readings land in the
// references the suite's gauge reads, and the answer column is kept
// apart from the judge's calls.
func TestParseTrace(t *testing.T) {
	for _, bad := range []string{"", "a,b,c\n", "on,xdp_ns,cycle_ns,spread,chase64k,chase8m\n", "on,xdp_ns,cycle_ns,spread,chase64k,chase8m\ntrue,x,1,1,1,1\n", "on,xdp_ns,cycle_ns,spread,chase64k,chase8m\ntrue,1,0,1,1,1\n"} {
		if _, err := parseTrace(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	tr, err := parseTrace(strings.NewReader("on,xdp_ns,cycle_ns,spread,chase64k,chase8m\ntrue,20,0.25,1.5,1.25,6\nfalse,16,0.25,1,1,5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.calls) != 2 || tr.calls[0].Cost != 80 || tr.calls[1].Cost != 64 || !tr.on[0] || tr.on[1] {
		t.Errorf("calls %+v, on %v", tr.calls, tr.on)
	}
	if l := tr.after[0]; l[gauge.Ports] != 1.5 || l[gauge.Caches] != 1.25 || l[gauge.Memory] != 6 {
		t.Errorf("readings %v: want the spread loop's 1.5 as ports, the chase's 1.25 as caches, the 8 MiB chase's 6 as memory", l)
	}
	// A trace of the gauge's own order, and one recorded before a
	// reference was: the columns a trace has, by name.
	tr, err = parseTrace(strings.NewReader("on,xdp_ns,cycle_ns,chase64k,spread,chase8m\nfalse,16,0.25,1.25,1.5,6\n"))
	if err != nil || tr.after[0] != (gauge.Load{gauge.Caches: 1.25, gauge.Ports: 1.5, gauge.Memory: 6}) {
		t.Errorf("columns by name: %v, %v", tr.after, err)
	}
	tr, err = parseTrace(strings.NewReader("on,xdp_ns,cycle_ns,spread,chase64k\nfalse,16,0.25,1.5,1.25\n"))
	if err != nil || tr.after[0] != (gauge.Load{gauge.Caches: 1.25, gauge.Ports: 1.5}) {
		t.Errorf("a trace without the memory column: %v, %v: want it unread", tr.after, err)
	}
	if _, err := parseTrace(strings.NewReader("on,xdp_ns,cycle_ns,other\nfalse,16,0.25,1\n")); err == nil {
		t.Error("a trace with no reference's column: no error")
	}
	if _, err := parseTrace(strings.NewReader("on,xdp_ns,cycle_ns,spread\nfalse,16,0.25\n")); err == nil {
		t.Error("a line shorter than the header: no error")
	}
}

// slowed is t with the program's cost raised by a third in every third
// stretch of 500 calls and nothing else changed: a
// negative control, in which no reference moves with the program.
func (t trace) slowed() trace {
	s := t
	s.calls = append([]gauge.Call(nil), t.calls...)
	for i := range s.calls {
		if raised(i) {
			s.calls[i].Cost *= 4.0 / 3
		}
	}
	return s
}

// raised says whether slowed raises call i.
func raised(i int) bool { return (i/500)%3 == 1 }

// raised is which calls slowed raised.
func (t trace) raised() []bool {
	r := make([]bool, len(t.calls))
	for i := range r {
		r[i] = raised(i)
	}
	return r
}

// TestDenseKeepsTheLevel: on every loaded trace whose slow calls are at
// most 45% of its calls, the densest part's median of all its calls, none
// left out, is within 1.5% of the load-off free calls' median: what a
// row's cycles/op reports of a pass in which such calls ran slow with
// nothing flagged (docs/method.md#dense).
func TestDenseKeepsTheLevel(t *testing.T) {
	tried := 0
	for _, w := range wants {
		if !w.loaded {
			continue
		}
		tr, err := readTrace(filepath.Join("testdata", w.file))
		if err != nil {
			t.Fatal(err)
		}
		slow := tr.slowCalls(w.slow)
		nslow, _ := count(slow, slow)
		if share := float64(nslow) / float64(len(slow)); share > 0.45 {
			continue
		}
		tried++
		costs := make([]float64, len(tr.calls))
		for i, c := range tr.calls {
			costs[i] = c.Cost
		}
		dense, median, off := robust.DenseMedian(costs), robust.Quantile(costs, 0.5), tr.offMedian(slow)
		t.Logf("%s: %.1f%% slow; all calls' dense %.2f, median %.2f; load-off free calls' median %.2f", w.file, 100*float64(nslow)/float64(len(slow)), dense, median, off)
		if math.Abs(dense/off-1) > 0.015 {
			t.Errorf("%s: the densest part's median %.2f is %+.1f%% off the load-off free calls' %.2f: want within 1.5%%", w.file, dense, 100*(dense/off-1), off)
		}
	}
	if tried == 0 {
		t.Error("no loaded trace with at most 45% slow calls: the test shows nothing")
	}
}
