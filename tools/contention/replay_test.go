package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/bpf/measure/gauge"
)

// A want is what the judge must do with a recorded trace. A call is slow
// when it cost more than slow times the median of the trace's fastest
// tenth: 1.2 as the Intel traces were counted when recorded, 1.1 on the
// AMD ones, where the valley between the free and the contended costs
// lies (testdata/README.md).
type want struct {
	file string
	slow float64
	// quiet: at most the slow calls and a tenth of the others flagged,
	// and the negative control.
	quiet bool
	// loaded: at least 85% of the slow calls flagged, at most 10% of the
	// others.
	loaded bool
}

var wants = []want{
	{file: "intel-6-167-quiet.csv.gz", slow: 1.2, quiet: true},
	{file: "intel-6-167-load-memory.csv.gz", slow: 1.2, loaded: true},
	{file: "intel-6-167-load-spread.csv.gz", slow: 1.2, loaded: true},
	{file: "amd-26-2-quiet.csv.gz", slow: 1.1, quiet: true, loaded: true},
	{file: "amd-26-2-host-busy.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-load-memory.csv.gz", slow: 1.1, loaded: true},
	{file: "amd-26-2-load-spread.csv.gz", slow: 1.1, loaded: true},
}

// TestReplay replays each recorded trace through the suite's judge and
// fails when it keeps slow calls or flags free ones; and, on a quiet
// trace with only the program's cost raised in stretches, when it flags
// the raised calls: a judge that flags a call because it was slow is an
// outlier filter.
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
			t.Logf("%d calls, %d slow (over %.1fx the fastest tenth): %.3f of them flagged, %.3f of the others", len(slow), nslow, w.slow, slowF, othersF)
			if w.quiet && all > float64(nslow)/float64(len(slow))+0.10 {
				t.Errorf("flagged %.3f of a quiet trace's calls, of which %d were slow: want at most a tenth more", all, nslow)
			}
			if w.loaded && slowF < 0.85 {
				t.Errorf("flagged %.3f of the slow calls, want at least 0.85", slowF)
			}
			if othersF > 0.10 {
				t.Errorf("flagged %.3f of the other calls, want at most 0.10", othersF)
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
			t.Logf("negative control: %s; %.3f of the raised calls kept before flagged", c.summary(cv), keptF)
			if keptF > 0.05 {
				t.Errorf("negative control: flagged %.3f of the calls whose cost alone was raised, want at most 0.05", keptF)
			}
		})
	}
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
	if l := tr.after[0]; l[gauge.Ports] != 1.5 || l[gauge.Caches] != 1.25 {
		t.Errorf("readings %v: want the spread loop's 1.5 as ports, the chase's 1.25 as caches", l)
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
