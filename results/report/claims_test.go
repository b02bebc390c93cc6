package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"
)

// committed reads the results files committed under results/, which hold
// every family's sub-benchmark names as the suite wrote them (the QEMU
// files the rows only a guest kernel ran, the trampolines').
func committed(t *testing.T) []*benchfile.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "results", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("no results/*.txt here: a go test -exec guest has only the test binary")
	}
	var files []*benchfile.File
	for _, p := range paths {
		f, err := benchfile.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestClaimSelectorsMatchResults derives the sub-benchmark names and
// their units from the committed results files and fails on any claim
// whose selector matches none of them, or more than one, or whose row
// does not report the unit the claim reads. A selector for an
// instruction-count file (delta-instrs/op) must match a row that reports
// the unit's timing twin (delta-ns/op): the instruction-count files name
// the same rows, with instrs for ns.
func TestClaimSelectorsMatchResults(t *testing.T) {
	units := map[string]map[string]bool{} // sub-benchmark -> units any run reported
	names := map[string]benchfile.Name{}
	for _, f := range committed(t) {
		for _, n := range f.Names {
			names[n] = f.Runs[n][0].Name
			if units[n] == nil {
				units[n] = map[string]bool{}
			}
			for _, r := range f.Runs[n] {
				for u := range r.Values {
					units[n][u] = true
				}
			}
		}
	}
	checked := 0
	for _, c := range claims {
		measures := []Measure{c.Measure}
		if c.Shape != nil {
			measures = append(measures, c.Shape.Measure)
		}
		for _, m := range measures {
			for _, s := range m.sels() {
				checked++
				var matched []string
				for n, nm := range names {
					if s.Matches(nm) {
						matched = append(matched, n)
					}
				}
				slices.Sort(matched)
				switch {
				case len(matched) == 0:
					t.Errorf("claim %s: %s matches no sub-benchmark in results/*.txt", c.ID, s.Name)
					continue
				case len(matched) > 1:
					t.Errorf("claim %s: %s matches %d sub-benchmarks (%s): name more keys", c.ID, s.Name, len(matched), strings.Join(matched, ", "))
					continue
				}
				unit := s.Unit
				if strings.Contains(unit, "instrs") {
					unit = strings.Replace(unit, "instrs", "ns", 1)
				}
				if !units[matched[0]][unit] {
					t.Errorf("claim %s: %s reports no %s in results/*.txt", c.ID, matched[0], unit)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no selector checked")
	}
}

// TestCommittedResultsJudged: the claims whose selectors were fixed (1.6's
// call=tailcall, 3.1's paired delta) and the run-time stats claim get a
// verdict from a run of ten passes (testdata/passes.txt) and from a run
// of one (testdata/one-run.txt), which says so; no claim is judged from
// an emulated file.
func TestCommittedResultsJudged(t *testing.T) {
	files := committed(t)
	intel, err := benchfile.Read(filepath.Join("testdata", "passes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	single, err := benchfile.Read(filepath.Join("testdata", "one-run.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1.6", "3.1", "7.1"} {
		for _, f := range []*benchfile.File{intel, single} {
			var c *Claim
			for i := range claims {
				if claims[i].ID == id {
					c = &claims[i]
				}
			}
			o := Evaluate(c, []*benchfile.File{f})[0]
			if !o.Verdict.judged() {
				t.Errorf("claim %s on %s: %v (%s), want a verdict", id, f.Stem(), o.Verdict, o.Reason)
			}
			if (f == single) != (o.Estimate.Caveat == stat.CaveatOneRun) {
				t.Errorf("claim %s on %s: caveat %q", id, f.Stem(), o.Estimate.Caveat)
			}
		}
	}
	for _, f := range files {
		if !f.Emulated() {
			continue
		}
		for i := range claims {
			for _, o := range Evaluate(&claims[i], []*benchfile.File{f}) {
				if o.Verdict.judged() {
					t.Errorf("claim %s judged from the emulated %s: %v", o.ID(), f.Stem(), o.Verdict)
				}
			}
		}
	}
}
