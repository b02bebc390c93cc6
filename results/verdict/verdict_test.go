package verdict

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/internal/resultstest"
	"bpfbench/results/stat"
)

// TestDecide holds the timing rules to their words: "within" only when
// the whole interval lies inside the published range; an interval that
// overlaps and reaches beyond it (8.5 [8.0, 9.1] against 9-11) is only
// "overlaps".
func TestDecide(t *testing.T) {
	effect := claims.Published{Value: 10, Lo: 9, Hi: 11}
	none := claims.Published{Value: 0, Lo: -1, Hi: 1}
	faster := claims.Published{Value: -5.1, Lo: -5.5, Hi: -4.7}
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		p    claims.Published
		e    stat.Estimate
		want Verdict
	}{
		{"effect inside", effect, stat.Estimate{Center: 10, Lo: 9.5, Hi: 10.5}, Within},
		{"effect overlapping", effect, stat.Estimate{Center: 8.5, Lo: 8, Hi: 9.1}, Overlaps},
		{"effect wider than the range", effect, stat.Estimate{Center: 10, Lo: 8, Hi: 12}, Overlaps},
		{"effect below", effect, stat.Estimate{Center: 8.6, Lo: 8.1, Hi: 8.9}, Outside},
		{"effect above", effect, stat.Estimate{Center: 12, Lo: 11.5, Hi: 12.5}, Outside},
		{"effect CI includes 0", claims.Published{Value: 1.2, Lo: 0, Hi: 2.5}, stat.Estimate{Center: 0.8, Lo: -0.2, Hi: 1.8}, CannotTell},
		{"effect CI includes 0 inside the range", claims.Published{Value: 1.2, Lo: -0.1, Hi: 2.5}, stat.Estimate{Center: 0.1, Lo: -0.05, Hi: 0.3}, CannotTell},
		{"effect without CI", effect, stat.Estimate{Center: 10, Lo: -inf, Hi: inf}, NoInterval},
		{"negative effect inside", faster, stat.Estimate{Center: -5, Lo: -5.2, Hi: -4.8}, Within},
		{"negative effect, CI includes 0", faster, stat.Estimate{Center: -4, Lo: -8, Hi: 0.5}, CannotTell},
		{"no effect, CI inside", none, stat.Estimate{Center: 0.1, Lo: -0.2, Hi: 0.4}, Within},
		{"no effect, CI too wide", none, stat.Estimate{Center: 0.1, Lo: -2, Hi: 2}, Overlaps},
		{"no effect, without CI", none, stat.Estimate{Center: 0.1, Lo: -inf, Hi: inf}, NoInterval},
		{"no effect, CI away", none, stat.Estimate{Center: 3, Lo: 2, Hi: 4}, Outside},
	} {
		if got, why := Decide(c.p, c.e); got != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

func TestDecideShape(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name   string
		change claims.Change
		e      stat.Estimate
		old    float64
		want   Verdict
	}{
		{"shorter", claims.Shorter, stat.Estimate{Center: -16, Lo: -17, Hi: -15}, 260, InShape},
		{"longer", claims.Shorter, stat.Estimate{Center: 12, Lo: 11, Hi: 13}, 250, NotInShape},
		{"the same, claimed shorter", claims.Shorter, stat.Estimate{Center: 0, Lo: 0, Hi: 0}, 250, NotInShape},
		{"straddling 0", claims.Shorter, stat.Estimate{Center: -1, Lo: -3, Hi: 1}, 250, ShapeUnclear},
		{"no interval", claims.Shorter, stat.Estimate{Center: -10, Lo: -inf, Hi: inf}, 250, NoInterval},
		{"unchanged", claims.Unchanged, stat.Estimate{Center: 1, Lo: 0.5, Hi: 1.5}, 120, InShape},
		{"changed", claims.Unchanged, stat.Estimate{Center: -30, Lo: -31, Hi: -29}, 120, NotInShape},
		{"at the edge", claims.Unchanged, stat.Estimate{Center: 4, Lo: 3, Hi: 6}, 120, ShapeUnclear},
	} {
		if got, why := DecideShape(c.change, c.e, c.old); got != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}

// TestRulesInOnePlace: every judging verdict is given by exactly one rule
// of the tables, and docs/report.md names every verdict.
func TestRulesInOnePlace(t *testing.T) {
	seen := map[Verdict]int{}
	for _, r := range append(slices.Clone(timingRules), shapeRules...) {
		if r.verdict == NoInterval {
			if r.text != noIntervalRule.text {
				t.Errorf("two rules for %v", r.verdict)
			}
			seen[r.verdict] = 1
			continue
		}
		seen[r.verdict]++
		if r.text == "" {
			t.Errorf("rule for %v has no text", r.verdict)
		}
	}
	for v := Verdict(0); v <= NoResults; v++ {
		if v.Judged() != (seen[v] == 1) || seen[v] > 1 {
			t.Errorf("verdict %v: %d rules", v, seen[v])
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "report.md"))
	if err != nil {
		t.Skipf("docs/report.md is not here (%v)", err)
	}
	for v := Verdict(0); v <= NoResults; v++ {
		if !bytes.Contains(doc, []byte("*"+v.String()+"*")) {
			t.Errorf("docs/report.md does not name the verdict *%s*", v)
		}
	}
	for _, r := range append(slices.Clone(timingRules), shapeRules...) {
		if line := "*" + r.verdict.String() + "*: " + r.text; !bytes.Contains(doc, []byte(line)) {
			t.Errorf("docs/report.md does not state the rule as the report does: %q", line)
		}
	}
}

func readTestdata(t *testing.T, names ...string) []*benchfile.File {
	return resultstest.Testdata(t, benchfile.Read, names...)
}

// verdicts maps an outcome's ID (with the files' tag when there are
// several) to the verdict.
func verdicts(files []*benchfile.File) (map[string]Verdict, map[string]string) {
	v, why := map[string]Verdict{}, map[string]string{}
	for i := range claims.All {
		for _, o := range Evaluate(&claims.All[i], files) {
			id := o.ID() + tags(files, o.Files, o.Verdict.Judged())
			v[id], why[id] = o.Verdict, o.Reason
		}
	}
	return v, why
}

// The hand-made file's numbers were chosen so that the verdicts are known:
// the indirect call costs 10.0 +- 0.2 ns (published 9-11: within),
// XDP_DROP runs in 7.5 ns (published 5-6: outside), the full dispatcher's
// fallback costs 0.45 ns more than the indirect call with a CI of
// [-1.1, 2.0] (published 2-4, an effect: cannot tell from zero), nothing
// was measured with mitigations=off (not measurable), and the fentry row
// was skipped by a kernel refusing tracing programs (not measurable).
func TestVerdicts(t *testing.T) {
	got, why := verdicts(readTestdata(t, "retpoline.txt"))
	for id, want := range map[string]Verdict{
		"1.1": Within,
		"1.2": Outside,
		"1.3": CannotTell,
		"1.4": NeedsBoot,
		"1.5": NeedsBoot,
		"1.6": Outside, // tail call 9.0 [8.7, 9.3], published 10-12
		"1.7": Outside, // paired delta 8.3 +- 0.2 ns/pkt, published 9.85-13.03
		"1.8": Within,  // 6.4 ns/pkt, published 2.9-23.4
		"T.1": NotMeasurable,
		"T.2": NotMeasurable, // the family ran, the row did not
		"T.3": Outside,       // 4.0 ns, published 2.65-2.95
		"3.1": Within,        // the redirect row's paired delta against tx: 6.5 [6.3, 6.7], published 3.8-9.6
		"3.2": NoData,
		"6.1": NeedsBoot, // needs a kernel from 6.19 on
		"8.1": NoFigure,
	} {
		if v, ok := got[id]; !ok || v != want {
			t.Errorf("claim %s: %v (%s), want %v", id, v, why[id], want)
		}
	}
	if !strings.Contains(why["1.4"], "mitigations=off") {
		t.Errorf("claim 1.4 is not measurable but does not say it needs mitigations=off: %s", why["1.4"])
	}
	if !strings.Contains(why["T.1"], "EPERM") {
		t.Errorf("claim T.1 does not give the skip reason: %s", why["T.1"])
	}
	if !strings.Contains(why["6.1"], "real (not emulated) kernel") {
		t.Errorf("claim 6.1 does not say a timing verdict needs real kernels: %s", why["6.1"])
	}
}

// With a second file from a mitigations=off boot, the claims that need it
// are measured, across files where they compare two boots.
func TestVerdictsAcrossBoots(t *testing.T) {
	got, why := verdicts(readTestdata(t, "retpoline.txt", "mitigations-off.txt"))
	for id, want := range map[string]Verdict{
		"1.1 [A]":   Within,
		"1.2 [A]":   Outside,
		"1.2 [B]":   Within,
		"1.4 [B]":   Within, // 0.1 [0, 0.2] inside +-1
		"1.5 [A-B]": Within, // 10.0 - 0.1
		"2.1 [all]": NeedsBoot,
		"3.1 [A]":   Within,
		"3.2 [all]": NoData,
	} {
		if v, ok := got[id]; !ok || v != want {
			t.Errorf("claim %s: %v (%s), want %v", id, v, why[id], want)
		}
	}
	if _, ok := got["1.1 [B]"]; ok {
		t.Error("claim 1.1 (needs retpolines) was evaluated on the mitigations=off file")
	}
	if _, ok := got["3.1 [B]"]; ok {
		t.Error("claim 3.1 says the mitigations=off file, which has no attach rows, has no data, although the other file measured it")
	}
}

func TestReportOutput(t *testing.T) {
	var out bytes.Buffer
	Report(&out, readTestdata(t, "retpoline.txt"))
	s := out.String()
	for _, want := range []string{
		"1 of 10 runs failed and are left out (suite measured 8.11 ns/op but the kernel 5 ns/op: clocks disagree)",
		"1.1        10 [9, 11]",
		"10.00 [9.90, 10.20]  within the published range",
		"needs a mitigations=off boot",
		"6 of 6 runs of action=redirect/mode=native/prog=drop/dispatcher=direct were not receiver-bound",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

// A file from an emulated guest (QEMU TCG) proves the code ran; its
// timings confirm or refute nothing.
func TestEmulatedGuest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "retpoline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tcg.txt")
	if err := os.WriteFile(path, append([]byte("virt: tcg\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := benchfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	got, why := verdicts([]*benchfile.File{f})
	if got["1.1"] != NoTiming || !strings.Contains(why["1.1"], "emulated") {
		t.Errorf("claim 1.1 on an emulated guest: %v (%s), want no timing verdict", got["1.1"], why["1.1"])
	}
	if got["3.2"] != NoData {
		t.Errorf("claim 3.2, not in the file: %v (%s), want no data", got["3.2"], why["3.2"])
	}
}

// TestControlRefusesVerdicts: a file whose A/A rows miss 0 too often gets
// no timing verdict, one whose rows cover 0 does, and the tail
// probability is the binomial one.
func TestControlRefusesVerdicts(t *testing.T) {
	if p := binomialTail(18, 4, 0.05); math.Abs(p-0.0109) > 0.0005 {
		t.Errorf("P(X >= 4 | n=18, p=0.05) = %.4f, want 0.0109", p)
	}
	if p := binomialTail(5, 0, 0.05); p != 1 {
		t.Errorf("P(X >= 0) = %v, want 1", p)
	}
	mk := func(misses, n int) *benchfile.File {
		f := &benchfile.File{Path: "x.txt", Runs: map[string][]benchfile.Run{}}
		name := "BenchmarkXDP/prog=aa/size=64"
		f.Names = []string{name}
		for i := range n {
			d := 0.01
			if i < misses {
				d = 0.5
			}
			f.Runs[name] = append(f.Runs[name], benchfile.Run{Name: benchfile.ParseName(name), Values: map[string]float64{"delta-ns/op": d, "delta-ci95-ns": 0.05}})
		}
		return f
	}
	if why := controlFails(mk(1, 20)); why != "" {
		t.Errorf("1 miss in 20 refused: %s", why)
	}
	if why := controlFails(mk(6, 20)); !strings.Contains(why, "6 of 20") {
		t.Errorf("6 misses in 20: %q, want a refusal naming them", why)
	}
}

// TestContendedRows: a row every run of which had too few free calls
// gets no timing verdict, and says why, whichever rule judged them.
func TestContendedRows(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "retpoline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Benchmark") {
			lines[i] = l + "\t0.95 contended-frac"
		}
	}
	old := strings.Join(lines, "\n")
	for _, tc := range []struct {
		name, text string
	}{
		{"judged", "contention-rule: slower-with-reference\n" + old},
		{"old rule", old},
	} {
		path := filepath.Join(t.TempDir(), "contended.txt")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := benchfile.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		got, why := verdicts([]*benchfile.File{f})
		if got["1.1"] != NoTiming || !strings.Contains(why["1.1"], "too few free calls") {
			t.Errorf("%s: claim 1.1 from contended rows: %v (%s), want no timing verdict naming the contention", tc.name, got["1.1"], why["1.1"])
		}
	}
	clean, err := benchfile.Read(filepath.Join("testdata", "retpoline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := verdicts([]*benchfile.File{clean}); got["1.1"] == NoTiming {
		t.Errorf("claim 1.1 from the same rows uncontended: no timing verdict")
	}
}

// TestCommittedResultsJudged: the claims whose selectors were fixed (1.6's
// call=tailcall, 3.1's paired delta) and the run-time stats claim get a
// verdict from a run of ten passes (testdata/passes.txt) and from a run
// of one (testdata/one-run.txt), which says so; no claim's timing is
// judged from an emulated file (a shape may be: its counts are exact).
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
			var c *claims.Claim
			for i := range claims.All {
				if claims.All[i].ID == id {
					c = &claims.All[i]
				}
			}
			o := Evaluate(c, []*benchfile.File{f})[0]
			if !o.Verdict.Judged() {
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
		for i := range claims.All {
			for _, o := range Evaluate(&claims.All[i], []*benchfile.File{f}) {
				if o.Verdict.Judged() && !o.Shape {
					t.Errorf("claim %s judged from the emulated %s: %v", o.ID(), f.Stem(), o.Verdict)
				}
			}
		}
	}
}

// committed reads the results files committed under results/, which hold
// every family's sub-benchmark names as the suite wrote them (the QEMU
// files the rows only a guest kernel ran, the trampolines').
func committed(t *testing.T) []*benchfile.File {
	return resultstest.Committed(t, benchfile.Read)
}

// TestControlLeans: A/A deltas on one side of 0, run after run, refuse the
// file's timing verdicts even when every interval covers 0; centred ones
// do not. The AMD EPYC 25/1 VM's committed 20 passes leaned (mean
// -0.126 ns); the Intel 6/207 VM's did not.
func TestControlLeans(t *testing.T) {
	mk := func(shift float64) *benchfile.File {
		f := &benchfile.File{Path: "x.txt", Runs: map[string][]benchfile.Run{}}
		for _, name := range []string{"BenchmarkXDP/prog=aa/size=64", "BenchmarkXDP/prog=aa/size=1500"} {
			f.Names = append(f.Names, name)
			for i := range 10 {
				d := shift + 0.2*float64(i%5-2) // -0.4..+0.4 around shift
				f.Runs[name] = append(f.Runs[name], benchfile.Run{Name: benchfile.ParseName(name), Values: map[string]float64{"delta-ns/op": d, "delta-ci95-ns": 0.5}})
			}
		}
		return f
	}
	if why := controlFails(mk(0)); why != "" {
		t.Errorf("centred control refused: %s", why)
	}
	if why := controlFails(mk(-0.25)); !strings.Contains(why, "BenchmarkXDP's runs") || !strings.Contains(why, "lean") {
		t.Errorf("control 0.25 ns below 0: %q, want a lean", why)
	}
	for file, lean := range map[string]bool{
		"20261202T105105Z-vm-6.18.44-fc-v1045-xdp20.txt": true,  // AMD 25/1
		"20261202T075503Z-vm-6.18.44-fc-v1045-xdp20.txt": false, // Intel 6/207
	} {
		f, err := benchfile.Read(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		if why := controlLeans(f); (why != "") != lean {
			t.Errorf("%s: %q, want a lean: %v", file, why, lean)
		} else {
			t.Logf("%s: %s", file, why)
		}
	}
}

// TestEveryVerdictHasItsWords: every verdict has a name of its own, and
// every verdict a decision can give comes with words of its own, never
// another verdict's (noWords).
func TestEveryVerdictHasItsWords(t *testing.T) {
	names := map[string]Verdict{}
	for v := Verdict(0); v < numVerdicts; v++ {
		n := v.String()
		if n == "" {
			t.Errorf("verdict %d has no name", v)
		}
		if w, dup := names[n]; dup {
			t.Errorf("verdicts %d and %d share the name %q", w, v, n)
		}
		names[n] = v
	}
	est := func(lo, hi float64) stat.Estimate { return stat.Estimate{Center: (lo + hi) / 2, Lo: lo, Hi: hi} }
	noCI := stat.Estimate{Center: 1, Lo: math.Inf(-1), Hi: math.Inf(1)}
	seen := map[Verdict]bool{}
	for _, p := range []claims.Published{{Value: 10, Lo: 9, Hi: 11}, {Value: 0, Lo: -1, Hi: 1}} {
		for _, e := range []stat.Estimate{noCI, est(9.5, 10.5), est(12, 13), est(-1, 12), est(-0.5, 0.5), est(0.5, 1.5)} {
			v, why := Decide(p, e)
			seen[v] = true
			if why == noWords(v) {
				t.Errorf("Decide(%+v, %+v): %v has no words of its own", p, e, v)
			}
		}
	}
	for _, c := range []claims.Change{claims.Shorter, claims.Unchanged, claims.Longer} {
		for _, e := range []stat.Estimate{noCI, est(-3, -2), est(2, 3), est(-1, 1), est(-100, -90)} {
			v, why := DecideShape(c, e, 100)
			seen[v] = true
			if why == noWords(v) {
				t.Errorf("DecideShape(%v, %+v): %v has no words of its own", c, e, v)
			}
		}
	}
	for v := Verdict(0); v < numVerdicts; v++ {
		if v.Judged() && !seen[v] {
			t.Errorf("no decision gave %v", v)
		}
	}
}
