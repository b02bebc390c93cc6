package main

import (
	"encoding/json"
	"io"
	"math"

	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/drift"
	"bpfbench/results/gate"
	"bpfbench/results/mechanism"
	"bpfbench/results/stat"
	"bpfbench/results/verdict"
)

// The report's JSON (-json): one object, its kind saying which of the
// report's outputs it holds, its schema_version which version of the
// schema docs/report.md#json documents. A figure that is not finite (an
// interval without bounds) is null.
const schemaVersion = 1

// num is a figure as JSON: null where it is not finite.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

type jsonRange struct {
	Value num `json:"value"`
	Lo    num `json:"lo"`
	Hi    num `json:"hi"`
}

type jsonFile struct {
	Path   string            `json:"path"`
	Labels map[string]string `json:"labels"`
}

func filesJSON(files []*benchfile.File) []jsonFile {
	out := []jsonFile{}
	for _, f := range files {
		ls := map[string]string{}
		for _, k := range benchfile.BootLabels {
			if v := f.Label(k); v != "" {
				ls[k] = v
			}
		}
		out = append(out, jsonFile{Path: f.Path, Labels: ls})
	}
	return out
}

func paths(files []*benchfile.File) []string {
	out := []string{}
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// A jsonClaim is one line of the verdicts' table, with its details.
type jsonClaim struct {
	ID        string     `json:"id"`
	Shape     bool       `json:"shape"`
	Text      string     `json:"text"`
	Files     []string   `json:"files"`
	Verdict   string     `json:"verdict"`
	Published *jsonRange `json:"published"`
	Unit      string     `json:"unit,omitempty"`
	Measured  *jsonRange `json:"measured"`
	Caveat    string     `json:"caveat,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Notes     []string   `json:"notes"`
}

type jsonMechanism struct {
	IDs     string   `json:"ids"`
	Row     string   `json:"row"`
	Unit    string   `json:"unit"`
	Files   []string `json:"files"`
	Counted string   `json:"counted"`
	Verdict string   `json:"verdict"`
}

// An anatomy row is every count per op of one row of an anatomy file.
type jsonAnatomyRow struct {
	Row    string         `json:"row"`
	Counts map[string]num `json:"counts"`
}

type jsonAnatomy struct {
	Path string           `json:"path"`
	Rows []jsonAnatomyRow `json:"rows"`
}

type verdictsJSON struct {
	SchemaVersion int             `json:"schema_version"`
	Kind          string          `json:"kind"`
	Files         []jsonFile      `json:"files"`
	Claims        []jsonClaim     `json:"claims"`
	Mechanisms    []jsonMechanism `json:"mechanisms"`
	Anatomy       []jsonAnatomy   `json:"anatomy"`
}

// writeVerdictsJSON is the report of files and anatomies as JSON: what
// verdict.Report and mechanism.Report print, and each anatomy's counts.
func writeVerdictsJSON(w io.Writer, files, anatomies []*benchfile.File) error {
	v := verdictsJSON{SchemaVersion: schemaVersion, Kind: "verdicts", Files: filesJSON(append(append([]*benchfile.File{}, files...), anatomies...)),
		Claims: []jsonClaim{}, Mechanisms: []jsonMechanism{}, Anatomy: []jsonAnatomy{}}
	if len(files) > 0 {
		for i := range claims.All {
			for _, o := range verdict.Evaluate(&claims.All[i], files) {
				c := jsonClaim{ID: o.ID(), Shape: o.Shape, Text: o.Claim.Text, Files: paths(o.Files), Verdict: o.Verdict.String(),
					Reason: o.Reason, Notes: append([]string{}, o.Notes...)}
				if p := o.Claim.Published; o.Claim.Info == nil && !o.Shape {
					c.Published, c.Unit = &jsonRange{num(p.Value), num(p.Lo), num(p.Hi)}, p.Unit
				}
				if o.Verdict.Judged() {
					e := o.Estimate
					c.Measured, c.Caveat = &jsonRange{num(e.Center), num(e.Lo), num(e.Hi)}, e.Caveat
				}
				v.Claims = append(v.Claims, c)
			}
		}
	}
	if len(anatomies) > 0 {
		for _, o := range mechanism.Judge(anatomies) {
			v.Mechanisms = append(v.Mechanisms, jsonMechanism{IDs: o.Rule.IDs, Row: o.Rule.Row, Unit: o.Rule.Unit, Files: paths(o.Files), Counted: o.Counted, Verdict: o.Verdict})
		}
		for _, f := range anatomies {
			a := jsonAnatomy{Path: f.Path, Rows: []jsonAnatomyRow{}}
			for _, name := range f.Names {
				r := jsonAnatomyRow{Row: name, Counts: map[string]num{}}
				for _, run := range f.Runs[name] {
					for u, x := range run.Values {
						r.Counts[u] = num(x)
					}
				}
				a.Rows = append(a.Rows, r)
			}
			v.Anatomy = append(v.Anatomy, a)
		}
	}
	return encode(w, v)
}

// A jsonRow is one row of a comparison.
type jsonRow struct {
	Row string `json:"row"`
	// A and B are the row's medians with benchmath's 95% interval over
	// each file's runs; Change is B over A, minus 1.
	A      jsonRange `json:"a"`
	B      jsonRange `json:"b"`
	Change num       `json:"change"`
	// Move is the change beyond the shared shift, P its test's p-value;
	// Beyond says p < 0.05; Floor is the row's A/A floor (null without
	// a pair), BeyondNoise that the move exceeds it as well.
	Move        num  `json:"move"`
	P           num  `json:"p"`
	Beyond      bool `json:"beyond_shift"`
	Floor       num  `json:"floor"`
	BeyondNoise bool `json:"beyond_noise"`
	// Gate is "fail" where the gate failed the row, else "pass".
	Gate string `json:"gate"`
}

type jsonUnit struct {
	Unit  string    `json:"unit"`
	Shift jsonRange `json:"shift"`
	// ShiftFloor is the shared shift two runs of one commit make on the
	// machine (drift.Floor.Shared; null without a pair).
	ShiftFloor num       `json:"shift_floor"`
	Rows       []jsonRow `json:"rows"`
}

type comparisonJSON struct {
	SchemaVersion int         `json:"schema_version"`
	Kind          string      `json:"kind"`
	A             jsonFile    `json:"a"`
	B             jsonFile    `json:"b"`
	AA            []string    `json:"aa"`
	Units         []jsonUnit  `json:"units"`
	Gate          gate.Result `json:"gate"`
}

// writeComparisonJSON is what make compare prints of two timed files,
// the gate's decision included: per unit, the shared shift and every
// row.
func writeComparisonJSON(w io.Writer, a, b *benchfile.File, aa [2]*benchfile.File, units []string, g gate.Result) error {
	fs := filesJSON([]*benchfile.File{a, b})
	c := comparisonJSON{SchemaVersion: schemaVersion, Kind: "comparison", A: fs[0], B: fs[1], AA: []string{}, Units: []jsonUnit{}, Gate: g}
	if aa[0] != nil {
		c.AA = []string{aa[0].Path, aa[1].Path}
	}
	failed := map[string]bool{}
	for _, f := range g.Failures {
		failed[f.Row+" "+f.Unit] = true
	}
	for _, u := range units {
		s, floor, ok := comparison(a, b, aa, u)
		if !ok {
			continue
		}
		ju := jsonUnit{Unit: u, Shift: jsonRange{num(s.Median), num(s.Lo), num(s.Hi)}, ShiftFloor: num(math.NaN()), Rows: []jsonRow{}}
		if floor != nil {
			ju.ShiftFloor = num(floor.Shared())
		}
		beyond, noise := map[string]bool{}, map[string]bool{}
		for _, m := range s.Beyond {
			beyond[m.Name] = true
		}
		for _, m := range s.Noise {
			noise[m.Name] = true
		}
		for _, m := range s.Moves() {
			av, bv := benchfile.Values(a.Runs[m.Name], u), benchfile.Values(b.Runs[m.Name], u)
			r := jsonRow{Row: m.Name, A: summary(av), B: summary(bv), Change: num(stat.Median(bv)/stat.Median(av) - 1),
				Move: num(m.Move), P: num(m.P), Beyond: beyond[m.Name], BeyondNoise: noise[m.Name], Floor: num(math.NaN()), Gate: "pass"}
			if floor != nil {
				r.Floor = num(floor.Of(m.Name))
			}
			if failed[m.Name+" "+u] {
				r.Gate = "fail"
			}
			ju.Rows = append(ju.Rows, r)
		}
		c.Units = append(c.Units, ju)
	}
	return encode(w, c)
}

// comparison is B against A in unit u, held to the floor of the A/A pair
// aa where there is one (nil without).
func comparison(a, b *benchfile.File, aa [2]*benchfile.File, u string) (drift.Comparison, *drift.Floor, bool) {
	var floor *drift.Floor
	if aa[0] != nil {
		floor, _ = drift.NewFloor(aa[0], aa[1], u)
	}
	s, ok := drift.Compare(a, b, u, floor)
	return s, floor, ok
}

// summary is xs' median and its 95% interval (stat.MedianCI).
func summary(xs []float64) jsonRange {
	m, lo, hi := stat.MedianCI(xs)
	return jsonRange{num(m), num(lo), num(hi)}
}

type gateJSON struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"`
	A             string `json:"a"`
	B             string `json:"b"`
	Passed        bool   `json:"passed"`
	gate.Result
}

func writeGateJSON(w io.Writer, a, b *benchfile.File, r gate.Result) error {
	return encode(w, gateJSON{SchemaVersion: schemaVersion, Kind: "gate", A: a.Path, B: b.Path, Passed: r.Passed(), Result: r})
}

func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
