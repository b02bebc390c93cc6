package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"bpfbench/bpf/measure/gauge"

	"github.com/aclements/go-moremath/stats"
)

// A trace is a recorded run of calls (writeCSV): one stream, one gauge
// reading after each call. on is the answer (the load was on), which
// never reaches the judge.
type trace struct {
	on    []bool
	calls []gauge.Call
	// after is each call's own reading, as the gauge after it read it.
	after []gauge.Load
}

// add appends a call of cost cycles per run, after which the spread loop
// read spread (Load[Ports]) and the 64 KiB chase chase (Load[Caches]).
func (t *trace) add(on bool, cost, spread, chase float64) {
	var l gauge.Load
	l[gauge.Ports], l[gauge.Caches] = spread, chase
	t.on = append(t.on, on)
	t.after = append(t.after, l)
	t.calls = append(t.calls, gauge.Call{Cost: cost})
}

// readTrace reads a trace from a CSV file, gzipped or not.
func readTrace(path string) (trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return trace{}, err
	}
	var r io.Reader = bytes.NewReader(data)
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		if r, err = gzip.NewReader(r); err != nil {
			return trace{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	t, err := parseTrace(bufio.NewReader(r))
	if err != nil {
		return trace{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// parseTrace reads the lines writeCSV writes:
// on,xdp_ns,cycle_ns,spread,chase64k,chase8m.
func parseTrace(r io.Reader) (trace, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return trace{}, err
	}
	if len(head) < 5 || head[0] != "on" || head[1] != "xdp_ns" || head[2] != "cycle_ns" || head[3] != "spread" || head[4] != "chase64k" {
		return trace{}, fmt.Errorf("header %q: want on,xdp_ns,cycle_ns,spread,chase64k,...", head)
	}
	var t trace
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return trace{}, err
		}
		var f [4]float64
		for j := range f {
			if f[j], err = strconv.ParseFloat(rec[j+1], 64); err != nil {
				return trace{}, fmt.Errorf("line %d: %w", len(t.calls)+2, err)
			}
		}
		if f[1] <= 0 {
			return trace{}, fmt.Errorf("line %d: cycle_ns %v", len(t.calls)+2, f[1])
		}
		t.add(rec[0] == "true", f[0]/f[1], f[2], f[3])
	}
	if len(t.calls) == 0 {
		return trace{}, errors.New("no calls")
	}
	return t, nil
}

// judge runs the suite's judge over t as the rounds engine would: each
// call's load the larger of the gauges before and after it, every reading
// added to the run's record, whose thresholds the judge takes.
func (t trace) judge() gauge.Verdict {
	var c gauge.Contention
	calls := append([]gauge.Call(nil), t.calls...)
	for i := range calls {
		calls[i].Load = c.Observe(t.after[i])
	}
	return c.Judge(calls)
}

// summary is the replay's line: the share of calls flagged, and the
// 10th percentile and median of the kept and of the flagged calls' costs.
func (t trace) summary(v gauge.Verdict) string {
	var kept, flagged []float64
	for i, c := range t.calls {
		if v.Contended[i] {
			flagged = append(flagged, c.Cost)
		} else {
			kept = append(kept, c.Cost)
		}
	}
	q := func(xs []float64, p float64) float64 { return stats.Sample{Xs: xs}.Quantile(p) }
	return fmt.Sprintf("flagged %.3f kept-p10 %.2f kept-median %.2f flagged-p10 %.2f flagged-median %.2f",
		float64(len(flagged))/float64(len(t.calls)), q(kept, 0.1), q(kept, 0.5), q(flagged, 0.1), q(flagged, 0.5))
}

// fastest is the median cost of the fastest tenth of t's calls.
func (t trace) fastest() float64 {
	costs := make([]float64, len(t.calls))
	for i, c := range t.calls {
		costs[i] = c.Cost
	}
	slices.Sort(costs)
	return stats.Sample{Xs: costs[:max(len(costs)/10, 1)]}.Quantile(0.5)
}

// slowCalls is which calls cost more than f times the median of the
// fastest tenth: how the traces' recordings counted slow calls.
func (t trace) slowCalls(f float64) []bool {
	fast := t.fastest()
	slow := make([]bool, len(t.calls))
	for i, c := range t.calls {
		slow[i] = c.Cost > f*fast
	}
	return slow
}
