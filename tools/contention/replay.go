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
	"strings"

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

// add appends a call of cost cycles per run, after which the references
// read load.
func (t *trace) add(on bool, cost float64, load gauge.Load) {
	t.on = append(t.on, on)
	t.after = append(t.after, load)
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

// parseTrace reads the lines writeCSV writes: on,xdp_ns,cycle_ns and
// then a column per reference, named as gauge.RefNames names it. A trace
// recorded before a reference was added lacks its column: the judge
// replays it with that reference unread, as the suite would have run.
func parseTrace(r io.Reader) (trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return trace{}, err
	}
	if len(head) < 3 || head[0] != "on" || head[1] != "xdp_ns" || head[2] != "cycle_ns" {
		return trace{}, fmt.Errorf("header %q: want on,xdp_ns,cycle_ns,%s,...", head, strings.Join(gauge.RefNames[:], ","))
	}
	var col [gauge.Refs]int
	found := 0
	for k, name := range gauge.RefNames {
		col[k] = slices.Index(head, name)
		if col[k] > 0 {
			found++
		}
	}
	if found == 0 {
		return trace{}, fmt.Errorf("header %q: no reference's column (%s)", head, strings.Join(gauge.RefNames[:], ", "))
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
		line := len(t.calls) + 2
		if len(rec) != len(head) {
			return trace{}, fmt.Errorf("line %d: %d fields, the header has %d", line, len(rec), len(head))
		}
		num := func(i int) (float64, error) {
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil {
				return 0, fmt.Errorf("line %d: %s: %w", line, head[i], err)
			}
			return v, nil
		}
		ns, err := num(1)
		if err != nil {
			return trace{}, err
		}
		cycle, err := num(2)
		if err != nil {
			return trace{}, err
		}
		if cycle <= 0 {
			return trace{}, fmt.Errorf("line %d: cycle_ns %v", line, cycle)
		}
		var l gauge.Load
		for k, i := range col {
			if i > 0 {
				if l[k], err = num(i); err != nil {
					return trace{}, err
				}
			}
		}
		t.add(rec[0] == "true", ns/cycle, l)
	}
	if len(t.calls) == 0 {
		return trace{}, errors.New("no calls")
	}
	return t, nil
}

// judge runs the suite's judge over t as the rounds engine would: each
// call's load the larger of the gauges before and after it, every reading
// added to the run's record, whose thresholds the judge takes.
func (t trace) judge() gauge.Decision {
	var c gauge.Contention
	calls := append([]gauge.Call(nil), t.calls...)
	for i := range calls {
		calls[i].Load = c.Observe(t.after[i])
	}
	return c.Judge(calls)
}

// summary is the replay's line: the share of calls flagged, and the
// 10th percentile and median of the kept and of the flagged calls' costs.
func (t trace) summary(v gauge.Decision) string {
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
