package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bpfbench/results/stat"
)

var update = flag.Bool("update", false, "write the JSON golden files of testdata/ anew")

// golden runs the report with args and -json, compares its output with
// testdata/name (written anew with -update), and decodes it into v.
func golden(t *testing.T, name string, v any, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run(append([]string{"-json"}, args...), &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("report -json %s: %s", strings.Join(args, " "), stderr.String())
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("report -json %s differs from %s (go test -run %s -update writes it anew):\n%s", strings.Join(args, " "), path, t.Name(), stdout.String())
	}
	dec := json.NewDecoder(bytes.NewReader(want))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// text is the report's text output for args.
func text(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	run(args, &stdout, &stderr)
	return stdout.String()
}

// TestJSONVerdicts: the verdicts' JSON of a results file and an
// anatomy says what the text says: each claim's verdict and measured
// value on its line of the table, each mechanism's verdict.
func TestJSONVerdicts(t *testing.T) {
	args := []string{"-plots=false", "testdata/retpoline.txt", "../20261204T191813Z-qemu-icount-7.3.4+deb13-cloud-amd64-anatomy.anatomy"}
	var v verdictsJSON
	golden(t, "verdicts.json", &v, args...)
	if v.SchemaVersion != schemaVersion || v.Kind != "verdicts" || len(v.Files) != 2 || len(v.Claims) == 0 || len(v.Mechanisms) == 0 || len(v.Anatomy) != 1 {
		t.Fatalf("decoded: schema %d, kind %q, %d files, %d claims, %d mechanisms, %d anatomies", v.SchemaVersion, v.Kind, len(v.Files), len(v.Claims), len(v.Mechanisms), len(v.Anatomy))
	}
	out := text(t, args...)
	table := out[:strings.Index(out, "\nDetails:")]
	for _, c := range v.Claims {
		line := ""
		for l := range strings.Lines(table) {
			rest, ok := strings.CutPrefix(l, c.ID)
			if ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "\t")) && (c.Shape || !strings.HasPrefix(rest, " shape")) {
				line = l
				break
			}
		}
		if line == "" || !strings.Contains(line, c.Verdict) {
			t.Errorf("claim %s: JSON verdict %q, text line %q", c.ID, c.Verdict, line)
			continue
		}
		if c.Measured != nil && !strings.Contains(line, stat.Format(float64(c.Measured.Value))) {
			t.Errorf("claim %s: JSON measured %v, text line %q", c.ID, c.Measured.Value, line)
		}
	}
	for _, m := range v.Mechanisms {
		if !strings.Contains(out, m.Verdict) || !strings.Contains(out, m.Counted) {
			t.Errorf("mechanism %s %s: %q, %q not in the text", m.IDs, m.Row, m.Counted, m.Verdict)
		}
	}
	for _, a := range v.Anatomy {
		if len(a.Rows) == 0 || a.Rows[0].Counts["instrs/op"] == 0 {
			t.Errorf("anatomy %s: rows %v", a.Path, a.Rows[:min(1, len(a.Rows))])
		}
	}
}

// TestJSONComparison: the comparison's JSON of the README's example pair
// holds the shift, every row, and the rows beyond the shift, the noise
// and the gate the text names.
func TestJSONComparison(t *testing.T) {
	a := "../20261202T082547Z-vm-6.18.44-fc-v1045-interleaved-old.txt"
	b := "../20261202T082547Z-vm-6.18.44-fc-v1045-interleaved-new.txt"
	var c comparisonJSON
	golden(t, "comparison.json", &c, "-drift", "-aa", "../aa", a, b)
	if c.SchemaVersion != schemaVersion || c.Kind != "comparison" || len(c.AA) != 2 || len(c.Units) != 1 || c.Units[0].Unit != "cycles/op" {
		t.Fatalf("decoded: schema %d, kind %q, aa %v, units %d", c.SchemaVersion, c.Kind, c.AA, len(c.Units))
	}
	out := text(t, "-drift", "-aa", "../aa", a, b)
	u := c.Units[0]
	if want := fmt.Sprintf("cycles/op: %d rows; shared shift %+.2f%%", len(u.Rows), 100*float64(u.Shift.Value)); !strings.Contains(out, want) {
		t.Errorf("text lacks %q:\n%s", want, out)
	}
	var noise int
	for _, r := range u.Rows {
		if !r.Beyond {
			continue
		}
		line := ""
		for l := range strings.Lines(out) {
			if strings.HasPrefix(strings.TrimSpace(l), r.Row+" ") {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf("%+.2f%% beyond the shift", 100*float64(r.Move))) || strings.Contains(line, "BEYOND THE NOISE") != r.BeyondNoise {
			t.Errorf("row %s: JSON move %+.4f, beyond the noise %v; text %q", r.Row, r.Move, r.BeyondNoise, line)
		}
		if r.BeyondNoise {
			noise++
		}
	}
	if want := fmt.Sprintf("): %d of %d rows", noise, len(u.Rows)); !strings.Contains(out, want) {
		t.Errorf("text lacks %q:\n%s", want, out)
	}
	gateOut := text(t, "-gate", "-aa", "../aa", a, b)
	for _, f := range c.Gate.Failures {
		if !strings.Contains(gateOut, "gate: FAIL "+f.Row+" "+f.Unit+": ") {
			t.Errorf("the gate's JSON fails %s %s; its text does not:\n%s", f.Row, f.Unit, gateOut)
		}
	}
	if len(c.Gate.Failures) == 0 || strings.Contains(gateOut, "gate: PASS") {
		t.Errorf("the example pair's gate: %d failures in JSON, text:\n%s", len(c.Gate.Failures), gateOut)
	}
	var g gateJSON
	golden(t, "gate.json", &g, "-gate", "-aa", "../aa", a, b)
	if g.Kind != "gate" || g.Passed || len(g.Failures) != len(c.Gate.Failures) {
		t.Errorf("the gate's own JSON: kind %q, passed %v, %d failures; the comparison's %d", g.Kind, g.Passed, len(g.Failures), len(c.Gate.Failures))
	}
}
