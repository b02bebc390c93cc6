package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// kcidbSchema is KCIDB's schema v5.3, a fixture of the repository's
// sibling shared/ (CI has it).
var kcidbSchema = filepath.Join("..", "..", "..", "shared", "kcidb", "kcidb.v5.3.schema.json")

// compileKCIDB compiles the schema as Draft-07 (it names no $schema),
// asserting formats (date-time, uri); the test skips without it.
func compileKCIDB(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(kcidbSchema)
	if os.IsNotExist(err) {
		t.Skipf("no KCIDB schema at %s (the shared fixtures are absent): nothing to validate against", kcidbSchema)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	if err := c.AddResource("kcidb.v5.3.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("kcidb.v5.3.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// kcidb runs the report with -kcidb and args, wanting exit status want.
func kcidb(t *testing.T, want int, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if got := run(append([]string{"-kcidb"}, args...), &stdout, &stderr); got != want {
		t.Fatalf("report -kcidb %s: exit %d, want %d: %s", strings.Join(args, " "), got, want, stderr.String())
	}
	return stdout.Bytes()
}

const (
	icount73     = "../20261201T150053Z-qemu-icount-7.3.4+deb13-cloud-amd64-icount-a.txt"
	anatomy73    = "../20261207T041141Z-qemu-icount-7.3.4+deb13-cloud-amd64-trampoline-2026.anatomy"
	statsAnatomy = "../20261207T041858Z-qemu-icount-7.3.4+deb13-cloud-amd64-stats.anatomy"
	anatomy612   = "../20261207T041321Z-qemu-icount-6.12.118+deb13-cloud-amd64-trampoline-2026.anatomy"
	aa1          = "../aa/20261207T023945Z-vm-amd-26-2-6.18.44-fc-v1272-aa1.txt"
	aa2          = "../aa/20261207T024346Z-vm-amd-26-2-6.18.44-fc-v1272-aa2.txt"
)

// TestKCIDBValidates: what -kcidb writes of a timed file, an
// instruction-count file, an anatomy, a comparison and a failing gate
// is valid KCIDB v5.3; a report that is not fails the test.
func TestKCIDBValidates(t *testing.T) {
	schema := compileKCIDB(t)
	for _, tc := range []struct {
		name string
		exit int
		args []string
		// paths are tests the report must hold, with their status.
		paths map[string]string
	}{
		{"timed", 0, []string{"testdata/retpoline.txt"}, map[string]string{
			"bpfbench.xdp.prog.drop.size.64.ns_per_op": "DONE", "bpfbench.claims.1_2": "DONE"}},
		{"icount", 0, []string{icount73}, map[string]string{"bpfbench.xdp.prog.drop.size.64.instrs_per_op": "DONE"}},
		{"anatomy", 0, []string{anatomy73}, map[string]string{
			"bpfbench.trampoline.target.xdp.attach.fsession.progs.1.delta-calls_per_op":                     "DONE",
			"bpfbench.mechanisms.9_4.trampoline.target.xdp.attach.fsession.progs.1.delta-calls_per_op":      "DONE",
			"bpfbench.mechanisms.2_1.dispatcher.dispatcher.none.fill.none.prog.tc.delta-kcfi-checks_per_op": "SKIP",
		}},
		{"comparison", 0, []string{"-drift", "-aa", "../aa", aa1, aa2}, map[string]string{
			"bpfbench.drift.xdp.prog.drop.size.64.cycles_per_op": "DONE", "bpfbench.gate": "PASS"}},
		{"failing gate", 1, []string{"-gate", anatomy612, anatomy73}, map[string]string{
			"bpfbench.gate": "FAIL", "bpfbench.gate.trampoline.target.helper.attach.fexit.progs.1": "FAIL",
			"bpfbench.gate.trampoline.target.helper.attach.fentry.progs.1": "PASS"}},
		{"gate with the matrix's other cells", 1, []string{"-gate", anatomy612, anatomy73, statsAnatomy}, map[string]string{
			"bpfbench.gate": "FAIL", "bpfbench.mechanisms.7_2.mitigations.prog.drop.stats.on.harden.0.spec.none.delta-clock-reads_per_op": "DONE",
			"bpfbench.mitigations.prog.drop.stats.on.harden.0.spec.none.delta-clock-reads_per_op": "DONE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := kcidb(t, tc.exit, append([]string{"-origin", "bpfbench_test"}, tc.args...)...)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Fatalf("the report is not KCIDB v5.3: %v", err)
			}
			var r kcidbReport
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, x := range r.Tests {
				if !strings.HasPrefix(x.ID, "bpfbench_test:") || x.Origin != "bpfbench_test" {
					t.Errorf("test %s of origin %s: every id and origin names the submitter", x.ID, x.Origin)
				}
				got[x.Path] = x.Status
			}
			for p, status := range tc.paths {
				if got[p] != status {
					t.Errorf("test %s: status %q, want %q", p, got[p], status)
				}
			}
		})
	}
}

// TestKCIDBSchemaBites: the validator refuses what KCIDB refuses, a
// start_time that is no date-time among them (format assertion is on).
func TestKCIDBSchemaBites(t *testing.T) {
	schema := compileKCIDB(t)
	var r kcidbReport
	if err := json.Unmarshal(kcidb(t, 0, "-origin", "ci", "testdata/retpoline.txt"), &r); err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(*kcidbReport){
		"a start_time that is no date-time": func(r *kcidbReport) { r.Tests[0].StartTime = "yesterday" },
		"a status KCIDB does not know":      func(r *kcidbReport) { r.Tests[0].Status = "WITHIN" },
		"an id without its origin":          func(r *kcidbReport) { r.Builds[0].ID = "bpfbench-build" },
	} {
		bad := r
		bad.Tests = append([]kcidbTest{}, r.Tests...)
		bad.Builds = append([]kcidbBuild{}, r.Builds...)
		spoil(&bad)
		data, err := json.Marshal(bad)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if schema.Validate(inst) == nil {
			t.Errorf("%s passed the schema", name)
		}
	}
}

// TestKCIDBNumbers: a time is in seconds with the metric prefix, a count
// keeps its unit, and the number is the median over the file's runs.
func TestKCIDBNumbers(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    float64
		want kcidbNumber
	}{
		{"ns/op", 7, kcidbNumber{7e-9, "s", "metric"}},
		{"delta-ns/op", 2.5, kcidbNumber{2.5e-9, "s", "metric"}},
		{"cycles/op", 19.5, kcidbNumber{19.5, "cycles", ""}},
		{"delta-instrs/op", 64, kcidbNumber{64, "instructions", ""}},
		{"delta-retpolines/op", 1, kcidbNumber{1, "retpolines", ""}},
		{"contended-frac", 0.1, kcidbNumber{0.1, "", ""}},
	} {
		if got := *number(tc.unit, tc.v); got != tc.want {
			t.Errorf("%s %v: %+v, want %+v", tc.unit, tc.v, got, tc.want)
		}
	}
	var r kcidbReport
	if err := json.Unmarshal(kcidb(t, 0, "-origin", "ci", "testdata/retpoline.txt"), &r); err != nil {
		t.Fatal(err)
	}
	for _, x := range r.Tests {
		if x.Path == "bpfbench.xdp.prog.drop.size.64.ns_per_op" {
			if x.Number == nil || x.Number.Unit != "s" || x.Number.Value <= 0 || x.Number.Value > 1e-6 || x.Misc["median"] == nil {
				t.Errorf("drop's ns/op: %+v, want its median in seconds", x)
			}
			if x.Environment == nil || x.Environment.Misc["kernel"] == "" || x.Environment.Misc["mitigations"] == "" {
				t.Errorf("drop's environment %+v: want the run's labels", x.Environment)
			}
			return
		}
	}
	t.Error("no test of drop's ns/op")
}

// TestKCIDBBuilds: the ids are the same for the same input; a base and a
// patched kernel of one release (two files' labels) are two builds.
func TestKCIDBBuilds(t *testing.T) {
	first := kcidb(t, 0, "-origin", "ci", anatomy73)
	if again := kcidb(t, 0, "-origin", "ci", anatomy73); !bytes.Equal(first, again) {
		t.Error("two reports of one file differ")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(anatomy73)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, label := range []string{"base", "patched"} {
		p := filepath.Join(dir, "20261207T000000Z-qemu-icount-7.3.4+deb13-cloud-amd64-"+label+".anatomy")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	var r kcidbReport
	if err := json.Unmarshal(kcidb(t, 0, append([]string{"-origin", "ci"}, files...)...), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Builds) != 2 || len(r.Checkouts) != 2 || r.Builds[0].ID == r.Builds[1].ID {
		t.Errorf("base and patched of one release: %d builds, %d checkouts, want two of each", len(r.Builds), len(r.Checkouts))
	}
}

// TestKCIDBBadInput: no -origin, an origin KCIDB refuses, no files, a
// file that cannot be read, and files without results are exit 2, said.
func TestKCIDBBadInput(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte("kernel: 7.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"testdata/retpoline.txt"}, "-origin"},
		{[]string{"-origin", "Bad-Name", "testdata/retpoline.txt"}, "-origin"},
		{[]string{"-origin", "ci"}, "no files"},
		{[]string{"-origin", "ci", "testdata/no-such-file.txt"}, "no-such-file"},
		{[]string{"-origin", "ci", empty}, "nothing to report"},
		{[]string{"-origin", "ci", "-gate", "testdata/retpoline.txt"}, "holds B to A"},
		{[]string{"-origin", "ci", "-drift", "testdata/retpoline.txt", "testdata/retpoline.txt", "testdata/retpoline.txt"}, "compares two files"},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(append([]string{"-kcidb"}, tc.args...), &stdout, &stderr); got != 2 || !strings.Contains(stderr.String(), tc.says) || stdout.Len() > 0 {
			t.Errorf("report -kcidb %s: exit %d, stderr %q, %d bytes out; want 2, saying %q, nothing out", strings.Join(tc.args, " "), got, stderr.String(), stdout.Len(), tc.says)
		}
	}
}
