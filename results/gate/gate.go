// Package gate decides whether a results file B regressed against A, for
// a kernel CI job that must fail a patch and pass the rest without a
// person reading tables (docs/ci.md). What it holds B to depends on what
// the files measured:
//
//   - Two timed files (cycles/op): a row beyond the machine's noise in
//     its bad direction (slower), from the newest A/A pair of A's machine
//     (drift.Floor), or a row slower than a threshold the user gives, in
//     percent or in ns/op. Without an A/A pair only the threshold gates.
//   - Two instruction-count files (virt: tcg-icount): a row whose path
//     grew by more than the tolerance (instrs/op).
//   - Two anatomy files (make vmbench ANATOMY=1): the same, and a
//     mechanism that appeared, disappeared or changed its whole count per
//     op, better or worse, because a person must look: a retpoline,
//     return or ITS thunk, a kCFI or FineIBT check, calls minus returns.
//
// Every gated unit is better lower; a shorter path or a faster row
// passes.
package gate

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"bpfbench/results/benchfile"
	"bpfbench/results/drift"
	"bpfbench/results/mechanism"
)

// Kind is what two files measured, and so what the gate holds B to.
type Kind string

const (
	Timed   Kind = "timed"
	Counts  Kind = "instruction-counts"
	Anatomy Kind = "anatomy"
)

// Options are what the user gives the gate.
type Options struct {
	// FailPct, when > 0, fails a timed row whose cycles/op median grew
	// by more than FailPct percent; FailNs one whose ns/op median grew by
	// more than FailNs.
	FailPct, FailNs float64
	// Tolerance, when >= 0, is the instructions per op a counted path may
	// grow by; below 0 the default, ExactTolerance.
	Tolerance float64
	// AA is the A/A pair of A's machine (none: nil files).
	AA [2]*benchfile.File
}

// ExactTolerance is the instructions per op a counted path may grow by
// by default: more than two passes of one kernel move a row the kernel's
// loop timed (docs/ci.md#tolerance). A
// row timed around bpf_loop (not exact, marked ~) is not held to its
// instrs/op at all: its passes differ by up to several times its count;
// an anatomy counts such rows exactly.
const ExactTolerance = 1.5

// mechanisms are the anatomy's units whose whole count per op must not
// change.
var mechanisms = []string{"retpolines/op", "retthunks/op", "itsthunks/op", "kcfi-checks/op", "fineibt-checks/op", "calls-rets/op"}

// A Failure is one row that failed, and why.
type Failure struct {
	Row  string  `json:"row"`
	Unit string  `json:"unit"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
	// Rule is what it failed: "noise", "threshold", "path" or
	// "mechanism"; Why says it with the figures.
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// A Result is the gate's decision on two files.
type Result struct {
	Kind Kind `json:"kind"`
	// Rows is the rows both files hold in the gated unit.
	Rows     int       `json:"rows"`
	Failures []Failure `json:"failures"`
	// Notes say what the gate could not hold B to, and why.
	Notes []string `json:"notes"`
}

// Passed says no row failed.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// Check holds B to A.
func Check(a, b *benchfile.File, o Options) (Result, error) {
	switch ai, bi := mechanism.IsAnatomy(a), mechanism.IsAnatomy(b); {
	case ai && bi:
		return counted(a, b, o, Anatomy), nil
	case ai || bi:
		return Result{}, fmt.Errorf("%s and %s: one is an anatomy file, the other not", a.Path, b.Path)
	}
	switch {
	case a.Icount() && b.Icount():
		return counted(a, b, o, Counts), nil
	case a.Icount() || b.Icount():
		return Result{}, fmt.Errorf("%s and %s: one counts instructions, the other keeps time", a.Path, b.Path)
	}
	return timed(a, b, o), nil
}

// counted holds B's paths to A's: instrs/op may grow by the tolerance,
// and in anatomy files no mechanism may change its whole count.
func counted(a, b *benchfile.File, o Options, kind Kind) Result {
	r := Result{Kind: kind, Failures: []Failure{}, Notes: []string{}}
	inexact := 0
	for _, c := range drift.Counts(a, b, "instrs/op") {
		r.Rows++
		// An anatomy's counts come from the plugin's windows: exact for
		// every row.
		if !c.Exact && kind != Anatomy {
			inexact++
			continue
		}
		tol, how := o.Tolerance, "the tolerance given"
		if tol < 0 {
			tol, how = ExactTolerance, "the default tolerance"
		}
		if c.B-c.A > tol {
			r.Failures = append(r.Failures, Failure{Row: c.Name, Unit: "instrs/op", A: c.A, B: c.B, Rule: "path",
				Why: fmt.Sprintf("path grew by %+.2f instructions per op (%s), past %s, %.2f", c.B-c.A, drift.Pct(c.A, c.B), how, tol)})
		}
	}
	if inexact > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d rows not timed by the kernel's loop (~, bpf_loop drivers) are not held to their instrs/op: not exact; an anatomy counts them", inexact))
	}
	if kind != Anatomy {
		return r
	}
	for _, u := range mechanisms {
		// A row with a baseline is held by what its variant adds over
		// it (delta-<unit>, the same rounds): that cancels what the two
		// share, such as a driver program's load
		// (docs/ci.md#what-fails). A row without one by its own count.
		deltas := map[string]bool{}
		cs := drift.Counts(a, b, "delta-"+u)
		for _, c := range cs {
			deltas[c.Name] = true
		}
		for _, c := range drift.Counts(a, b, u) {
			if !deltas[c.Name] {
				cs = append(cs, c)
			}
		}
		unit := func(row string) string {
			if deltas[row] {
				return "delta-" + u
			}
			return u
		}
		for _, c := range cs {
			u := unit(c.Name)
			if math.Abs(c.B-c.A) < 0.5 {
				continue
			}
			what := "changed its count"
			switch {
			case math.Abs(c.A) < 0.5:
				what = "appeared"
			case math.Abs(c.B) < 0.5:
				what = "disappeared"
			}
			r.Failures = append(r.Failures, Failure{Row: c.Name, Unit: u, A: c.A, B: c.B, Rule: "mechanism",
				Why: fmt.Sprintf("%s %s: %.2f -> %.2f per op (a mechanism changed: look, better or worse)", strings.TrimSuffix(u, "/op"), what, c.A, c.B)})
		}
	}
	return r
}

// timed holds B's cycles/op to A's: beyond the A/A pair's noise, or the
// user's threshold.
func timed(a, b *benchfile.File, o Options) Result {
	r := Result{Kind: Timed, Failures: []Failure{}, Notes: []string{}}
	cycRows := drift.Counts(a, b, "cycles/op") // both files' medians
	cycles := map[string]drift.Count{}
	for _, c := range cycRows {
		cycles[c.Name] = c
	}
	for _, f := range []*benchfile.File{a, b} {
		if len(f.Discordant()) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %s", filepath.Base(f.Path), f.PassSummary()))
		}
		if s := f.SlowBaseSummary(); s != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %s", filepath.Base(f.Path), s))
		}
	}
	var floor *drift.Floor
	if o.AA[0] != nil {
		floor, _ = drift.NewFloor(o.AA[0], o.AA[1], "cycles/op")
		if why := drift.Foreign(a, o.AA); why != "" {
			r.Notes = append(r.Notes, "noise floor: "+why)
		}
	}
	if floor == nil {
		r.Notes = append(r.Notes, "no A/A pair of this machine (cpu-vendor, cpu-family-model, virt) in results/aa/: no noise floor (make aa makes one); gating only on the thresholds given")
		if o.FailPct <= 0 && o.FailNs <= 0 {
			r.Notes = append(r.Notes, "no threshold given (-fail-on 5% or 2ns): nothing to hold B to")
		}
	}
	s, ok := drift.Compare(a, b, "cycles/op", floor)
	if ok {
		r.Rows = s.Rows
		for _, m := range s.Noise {
			if m.Move > 0 {
				c := cycles[m.Name]
				r.Failures = append(r.Failures, Failure{Row: m.Name, Unit: "cycles/op", A: c.A, B: c.B, Rule: "noise",
					Why: fmt.Sprintf("slower by %+.2f%% beyond the shared shift (%+.2f%%), past its A/A floor %.2f%% (p=%.3f)", 100*m.Move, 100*s.Median, 100*floor.Of(m.Name), m.P)})
			}
		}
		if floor != nil && s.Lo > floor.Shared() {
			r.Failures = append(r.Failures, Failure{Row: "(every row)", Unit: "cycles/op", Rule: "noise",
				Why: fmt.Sprintf("all rows slower together: shared shift %+.2f%% [%+.2f%%, %+.2f%%], past the A/A pair's %.2f%% (its floor %.2f%%, its own shift %+.2f%%)",
					100*s.Median, 100*s.Lo, 100*s.Hi, 100*floor.Shared(), 100*floor.Machine, 100*floor.Shift)})
		}
	} else {
		r.Notes = append(r.Notes, "the files share no row in cycles/op")
	}
	if o.FailPct > 0 {
		for _, c := range cycRows {
			if c.A > 0 && c.B/c.A-1 > o.FailPct/100 {
				r.Failures = append(r.Failures, Failure{Row: c.Name, Unit: "cycles/op", A: c.A, B: c.B, Rule: "threshold",
					Why: fmt.Sprintf("slower by %s, past -fail-on %g%%", drift.Pct(c.A, c.B), o.FailPct)})
			}
		}
	}
	if o.FailNs > 0 {
		for _, c := range drift.Counts(a, b, "ns/op") {
			if c.B-c.A > o.FailNs {
				r.Failures = append(r.Failures, Failure{Row: c.Name, Unit: "ns/op", A: c.A, B: c.B, Rule: "threshold",
					Why: fmt.Sprintf("slower by %+.2f ns/op, past -fail-on %gns", c.B-c.A, o.FailNs)})
			}
		}
	}
	return r
}

// Write prints r for a person: its notes, one line per failure, and
// last the decision.
func Write(w io.Writer, r Result) {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "gate: note: %s\n", n)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "gate: FAIL %s %s: %s\n", f.Row, f.Unit, f.Why)
	}
	if r.Passed() {
		fmt.Fprintf(w, "gate: PASS: %d rows (%s), none regressed\n", r.Rows, r.Kind)
		return
	}
	fmt.Fprintf(w, "gate: FAIL: %d failures in %d rows (%s)\n", len(r.Failures), r.Rows, r.Kind)
}

// ParseThreshold reads -fail-on: a percentage ("5%") or ns per op
// ("2ns").
func ParseThreshold(s string) (pct, ns float64, err error) {
	bad := fmt.Errorf("-fail-on %q: want a percentage (5%%) or ns per op (2ns)", s)
	var v string
	var unit *float64
	switch {
	case strings.HasSuffix(s, "%"):
		v, unit = strings.TrimSuffix(s, "%"), &pct
	case strings.HasSuffix(s, "ns"):
		v, unit = strings.TrimSuffix(s, "ns"), &ns
	default:
		return 0, 0, bad
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0, 0, bad
	}
	*unit = x
	return pct, ns, nil
}
