package verdict

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/internal/resultstest"
	"bpfbench/results/stat"
)

// TestNoLabels: results without labels are judged where no boot is
// needed, and a claim that needs one says which labels are missing.
func TestNoLabels(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "retpoline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(l, ": "); ok && !strings.Contains(k, " ") && !strings.HasPrefix(l, "Benchmark") {
			continue // a label
		}
		kept = append(kept, l)
	}
	f, err := benchfile.Read(resultstest.WriteFile(t, "bare.txt", strings.Join(kept, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	got, why := verdicts([]*benchfile.File{f})
	if got["1.2"] != Outside {
		t.Errorf("claim 1.2 (no boot needed): %v (%s), want outside the published range", got["1.2"], why["1.2"])
	}
	for _, id := range []string{"1.1", "1.4", "5.1"} {
		if got[id] != NoLabels || !strings.Contains(why[id], "has no label") {
			t.Errorf("claim %s: %v (%s), want labels missing, naming them", id, got[id], why[id])
		}
	}
	var out bytes.Buffer
	Report(&out, []*benchfile.File{f})
	if !strings.Contains(out.String(), "no labels") {
		t.Errorf("the report does not warn that the file has no labels:\n%s", out.String())
	}
}

// TestOneRun: a verdict drawn from a single run says so.
func TestOneRun(t *testing.T) {
	path := resultstest.WriteFile(t, "one.txt", "kernel: 6.18.0\nmitigations: auto\nretpoline: on\ncfi: off\n"+
		"BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc-2\t1\t15.0 ns/op\t0.20 delta-ci95-ns\t10.0 delta-ns/op\n")
	f, err := benchfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	o := Evaluate(&claims.All[0], []*benchfile.File{f})[0]
	if o.Claim.ID != "1.1" || o.Verdict != Within || o.Estimate.Caveat != stat.CaveatOneRun {
		t.Fatalf("claim %s from one run: %v, caveat %q", o.Claim.ID, o.Verdict, o.Estimate.Caveat)
	}
	var out bytes.Buffer
	Report(&out, []*benchfile.File{f})
	if !strings.Contains(out.String(), "within the published range (one run: interval from that run only)") {
		t.Errorf("the report does not say the verdict rests on one run:\n%s", out.String())
	}
}

// TestIcount: instruction-count files of two kernels judge the shape of
// the jmp-mode claims, and never a timing. The hand-made files: fexit
// 260 -> 244 instructions per call (shorter: in shape), fmod_ret 250 ->
// 262 (longer: not in shape), fentry 120 -> 121 (within ±4%: in shape).
func TestIcount(t *testing.T) {
	files := readTestdata(t, "icount-6.12.txt", "icount-7.0.txt")
	if !files[0].Icount() || !files[0].Emulated() {
		t.Fatal("an instruction-count file is not recognised")
	}
	got, why := verdicts(files)
	for id, want := range map[string]Verdict{
		"6.1 shape [B-A]": InShape,
		"6.2 shape [B-A]": NotInShape,
		"6.3 shape [B-A]": InShape,
		"6.1 [all]":       NoTiming,
		"6.4 [all]":       NoTiming,
		"T.1 [A]":         NoTiming,
		"T.1 [B]":         NoTiming,
		"1.1 [all]":       NoData,
	} {
		if v, ok := got[id]; !ok || v != want {
			t.Errorf("%s: %v (%s), want %v", id, v, why[id], want)
		}
	}
	if !strings.Contains(why["6.1 [all]"], "real (not emulated)") {
		t.Errorf("6.1's timing does not say it needs real kernels: %s", why["6.1 [all]"])
	}
	if !strings.Contains(why["T.1 [A]"], "instruction counts") {
		t.Errorf("T.1 on an instruction-count file does not say why there is no timing verdict: %s", why["T.1 [A]"])
	}
	// One kernel is not a shape.
	got, why = verdicts(files[:1])
	if got["6.1 shape"] != NeedsBoot || !strings.Contains(why["6.1 shape"], "6.19 or later") {
		t.Errorf("6.1 shape from one kernel: %v (%s)", got["6.1 shape"], why["6.1 shape"])
	}
}

// TestNoResults: a file without result lines is said to hold none, for
// every claim (not "not measurable on this kernel"), and by the report.
func TestNoResults(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"labels only": "kernel: 6.18.0\nretpoline: on\nmitigations: auto\ncfi: off\n",
		"no results":  "goos: linux\nPASS\nok  \tbpfbench/bench\t0.01s\n",
	} {
		t.Run(name, func(t *testing.T) {
			f, err := benchfile.Read(resultstest.WriteFile(t, "x.txt", text))
			if err != nil {
				t.Fatal(err)
			}
			for i := range claims.All {
				for _, o := range Evaluate(&claims.All[i], []*benchfile.File{f}) {
					if o.Verdict != NoResults || !strings.Contains(o.Reason, "holds no results") {
						t.Errorf("claim %s: %v (%s), want no results", o.ID(), o.Verdict, o.Reason)
					}
				}
			}
			var out bytes.Buffer
			Report(&out, []*benchfile.File{f})
			if !strings.Contains(out.String(), "holds no results") {
				t.Errorf("the report does not say the file holds no results:\n%s", out.String())
			}
			if strings.Contains(out.String(), NotMeasurable.String()) {
				t.Errorf("the report calls a claim not measurable on a file without results:\n%s", out.String())
			}
		})
	}
}
