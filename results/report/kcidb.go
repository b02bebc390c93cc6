package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/drift"
	"bpfbench/results/gate"
	"bpfbench/results/mechanism"
	"bpfbench/results/stat"
	"bpfbench/results/verdict"
)

// The report as KCIDB, kernel CI's shared results format (schema v5.3,
// docs/ci.md#kcidb): a checkout and a build per kernel of the input, a
// DONE test per row and unit, a DONE (or SKIP) test per verdict, and a
// PASS or FAIL test per gated row and for the whole gate.

// kcidbMinor is the schema's minor version the report writes (5.3).
const kcidbMinor = 3

// originRe is KCIDB's pattern of an origin, the prefix of every id.
var originRe = regexp.MustCompile(`^[a-z0-9_]+$`)

type kcidbReport struct {
	Version   kcidbVersion    `json:"version"`
	Checkouts []kcidbCheckout `json:"checkouts"`
	Builds    []kcidbBuild    `json:"builds"`
	Tests     []kcidbTest     `json:"tests"`
}

type kcidbVersion struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

type kcidbCheckout struct {
	ID      string         `json:"id"`
	Origin  string         `json:"origin"`
	Comment string         `json:"comment"`
	Valid   bool           `json:"valid"`
	Misc    map[string]any `json:"misc"`
}

type kcidbBuild struct {
	ID           string         `json:"id"`
	CheckoutID   string         `json:"checkout_id"`
	Origin       string         `json:"origin"`
	Architecture string         `json:"architecture"`
	Comment      string         `json:"comment"`
	Misc         map[string]any `json:"misc"`
}

type kcidbTest struct {
	ID          string            `json:"id"`
	BuildID     string            `json:"build_id"`
	Origin      string            `json:"origin"`
	Path        string            `json:"path"`
	Status      string            `json:"status"`
	StartTime   string            `json:"start_time,omitempty"`
	Number      *kcidbNumber      `json:"number,omitempty"`
	Environment *kcidbEnvironment `json:"environment,omitempty"`
	Comment     string            `json:"comment,omitempty"`
	Misc        map[string]any    `json:"misc"`
}

type kcidbNumber struct {
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Prefix string  `json:"prefix,omitempty"`
}

type kcidbEnvironment struct {
	Comment string            `json:"comment"`
	Misc    map[string]string `json:"misc"`
}

// kcidbWriter builds one report: every id starts with the origin, and
// the same input gives the same ids.
type kcidbWriter struct {
	origin string
	r      kcidbReport
	builds map[string]string // kernel's key: build id
	ids    map[string]int    // test ids given, to number repeats
}

func newKCIDB(origin string) *kcidbWriter {
	return &kcidbWriter{origin: origin, builds: map[string]string{}, ids: map[string]int{},
		r: kcidbReport{Version: kcidbVersion{5, kcidbMinor}, Checkouts: []kcidbCheckout{}, Builds: []kcidbBuild{}, Tests: []kcidbTest{}}}
}

// id is a stable id of parts, under the origin.
func (w *kcidbWriter) id(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return w.origin + ":bpfbench-" + kind + "-" + hex.EncodeToString(h[:8])
}

// fileLabel is the last part of a results file's name, its LABEL: what
// follows the kernel's release in it (make bench, make vmbench), or the
// whole stem where the name holds no release (tools/kernelgate's 1-<k>,
// 2-<k>).
func fileLabel(f *benchfile.File) string {
	stem := strings.TrimSuffix(f.Stem(), "-anatomy")
	if k := f.Label("kernel"); k != "absent" {
		if i := strings.LastIndex(stem, k); i >= 0 {
			return strings.TrimPrefix(stem[i+len(k):], "-")
		}
	}
	return stem
}

// build is the build (and checkout) of f's kernel: told apart by the
// kernel and kernel-version labels and the file's label, so a base and a
// patched kernel of one release are two.
func (w *kcidbWriter) build(f *benchfile.File) string {
	kernel, version, label := f.Label("kernel"), f.Label("kernel-version"), fileLabel(f)
	key := kernel + "\x00" + version + "\x00" + label
	if id, ok := w.builds[key]; ok {
		return id
	}
	checkout := w.id("checkout", kernel, version, label)
	build := w.id("build", kernel, version, label)
	misc := map[string]any{"kernel": kernel, "kernel-version": version, "label": label}
	what := fmt.Sprintf("Linux %s (%s), %s", kernel, version, label)
	w.r.Checkouts = append(w.r.Checkouts, kcidbCheckout{ID: checkout, Origin: w.origin, Comment: what, Valid: true, Misc: misc})
	w.r.Builds = append(w.r.Builds, kcidbBuild{ID: build, CheckoutID: checkout, Origin: w.origin, Architecture: "x86_64", Comment: what, Misc: misc})
	w.builds[key] = build
	return build
}

// test adds a test; its id is stable for the same build, path and key,
// numbered where one repeats.
func (w *kcidbWriter) test(build, path, key string, t kcidbTest) {
	id := w.id("test", build, path, key)
	if n := w.ids[id]; n > 0 {
		w.ids[id]++
		id = fmt.Sprintf("%s-%d", id, n)
	} else {
		w.ids[id] = 1
	}
	t.ID, t.BuildID, t.Origin, t.Path = id, build, w.origin, path
	if t.Misc == nil {
		t.Misc = map[string]any{}
	}
	w.r.Tests = append(w.r.Tests, t)
}

// kcidbSafe is KCIDB's path alphabet: a character outside [a-zA-Z0-9_-]
// becomes _.
var kcidbUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

func kcidbSafe(s string) string { return kcidbUnsafe.ReplaceAllString(s, "_") }

// rowPath is a row's path: bpfbench.<family>.<key>.<value>..., the
// family lower-case without Benchmark.
func rowPath(root string, n benchfile.Name) string {
	parts := []string{root, kcidbSafe(strings.ToLower(strings.TrimPrefix(n.Family, "Benchmark")))}
	for _, k := range n.Order {
		parts = append(parts, kcidbSafe(k), kcidbSafe(n.Keys[k]))
	}
	return strings.Join(parts, ".")
}

// unitPath is a unit as the last part of a path: its / reads "per"
// (ns/op is ns_per_op), and every other character outside the alphabet
// becomes _.
func unitPath(u string) string { return kcidbSafe(strings.ReplaceAll(u, "/", "_per_")) }

// number is a value of unit u as KCIDB holds it: times in seconds with
// the metric prefix, counts in their own unit with none.
func number(u string, v float64) *kcidbNumber {
	stem, _, per := strings.Cut(u, "/")
	// The quantity is the stem's last word: delta-ns, call-us,
	// kernel-instrs, jited-bytes.
	switch stem[strings.LastIndex(stem, "-")+1:] {
	case "ns":
		return &kcidbNumber{Value: v / 1e9, Unit: "s", Prefix: "metric"}
	case "us":
		return &kcidbNumber{Value: v / 1e6, Unit: "s", Prefix: "metric"}
	case "instrs":
		return &kcidbNumber{Value: v, Unit: "instructions"}
	case "kinstrs":
		return &kcidbNumber{Value: v * 1e3, Unit: "instructions"}
	case "cycles":
		return &kcidbNumber{Value: v, Unit: "cycles"}
	case "bytes":
		return &kcidbNumber{Value: v, Unit: "B"}
	case "pps":
		return &kcidbNumber{Value: v, Unit: "packets/s", Prefix: "metric"}
	case "ghz":
		return &kcidbNumber{Value: v * 1e9, Unit: "Hz", Prefix: "metric"}
	}
	if per {
		// An event per op (calls/op, delta-retpolines/op): the events.
		return &kcidbNumber{Value: v, Unit: strings.TrimPrefix(stem, "delta-")}
	}
	return &kcidbNumber{Value: v}
}

// startTime is the file's runstamp as KCIDB's date-time, "" without one.
func startTime(f *benchfile.File) string {
	t, err := time.Parse("20060102T150405Z", f.Label("runstamp"))
	if err != nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// environment is where f ran: its labels.
func environment(f *benchfile.File) *kcidbEnvironment {
	misc := map[string]string{}
	for k, v := range f.Config {
		misc[k] = v
	}
	return &kcidbEnvironment{
		Comment: fmt.Sprintf("%s %s, %s, kernel %s", f.Label("cpu-vendor"), f.Label("cpu-family-model"), f.Label("virt"), f.Label("kernel")),
		Misc:    misc,
	}
}

// rows adds a DONE test per row and unit of f: the median over its
// runs; SKIP where every run was left out (contended, or a pass that
// disagreed).
func (w *kcidbWriter) rows(f *benchfile.File) {
	build := w.build(f)
	for _, name := range f.Names {
		runs := f.Runs[name]
		var units []string
		for _, r := range runs {
			for u := range r.Values {
				if !slices.Contains(units, u) {
					units = append(units, u)
				}
			}
		}
		slices.Sort(units)
		n := benchfile.ParseName(name)
		for _, u := range units {
			t := kcidbTest{Status: "DONE", StartTime: startTime(f), Environment: environment(f),
				Misc: map[string]any{"file": filepath.Base(f.Path), "row": name, "unit": u, "runs": len(runs)}}
			vs := benchfile.Values(runs, u)
			if len(vs) == 0 {
				t.Status = "SKIP"
				t.Misc["reason"] = "every run was left out: contended, or from a pass that disagreed with the file"
			} else {
				t.Number = number(u, stat.Median(vs))
				t.Misc["median"] = stat.Median(vs)
				t.Misc["kept"] = len(vs)
			}
			path := rowPath("bpfbench", n) + "." + unitPath(u)
			w.test(build, path, filepath.Base(f.Path), t)
		}
	}
}

// buildOf is the build a verdict's test hangs on: its first file's.
func (w *kcidbWriter) buildOf(files, all []*benchfile.File) string {
	if len(files) > 0 {
		return w.build(files[0])
	}
	return w.build(all[0])
}

// verdicts adds a test per claim's verdict and per mechanism's: DONE
// with the verdict's words in misc where one was drawn, SKIP where not.
// An "outside the published range" judges the claim, not the kernel.
func (w *kcidbWriter) verdicts(files, anatomies []*benchfile.File) {
	all := append(append([]*benchfile.File{}, files...), anatomies...)
	if len(files) > 0 {
		for i := range claims.All {
			for _, o := range verdict.Evaluate(&claims.All[i], files) {
				path := "bpfbench.claims." + kcidbSafe(o.Claim.ID)
				if o.Shape {
					path += ".shape"
				}
				t := kcidbTest{Status: "SKIP", Comment: o.Claim.Text,
					Misc: map[string]any{"claim": o.Claim.ID, "verdict": o.Verdict.String(), "reason": o.Reason, "files": paths(o.Files), "notes": o.Notes}}
				if o.Verdict.Judged() {
					t.Status = "DONE"
					e := o.Estimate
					t.Misc["measured"] = map[string]any{"value": num(e.Center), "lo": num(e.Lo), "hi": num(e.Hi), "caveat": e.Caveat}
				}
				if p := o.Claim.Published; o.Claim.Info == nil && !o.Shape {
					t.Misc["published"] = map[string]any{"value": num(p.Value), "lo": num(p.Lo), "hi": num(p.Hi), "unit": p.Unit, "from": p.From}
				}
				w.test(w.buildOf(o.Files, all), path, strings.Join(paths(o.Files), " "), t)
			}
		}
	}
	if len(anatomies) == 0 {
		return
	}
	for _, o := range mechanism.Judge(anatomies) {
		path := "bpfbench.mechanisms." + kcidbSafe(o.Rule.IDs) + "." + strings.TrimPrefix(rowPath("", benchfile.ParseName(o.Rule.Row)), ".") + "." + unitPath(o.Rule.Unit)
		t := kcidbTest{Status: "SKIP", Misc: map[string]any{"claims": o.Rule.IDs, "row": o.Rule.Row, "unit": o.Rule.Unit, "verdict": o.Verdict, "counted": o.Counted, "files": paths(o.Files)}}
		if len(o.Files) > 0 {
			t.Status = "DONE"
		}
		w.test(w.buildOf(o.Files, all), path, strings.Join(paths(o.Files), " "), t)
	}
}

// gate adds the gate's tests on B's build: PASS or FAIL per gated row
// and for the whole gate.
func (w *kcidbWriter) gate(a, b *benchfile.File, r gate.Result) {
	build := w.build(b)
	unit := "instrs/op"
	if r.Kind == gate.Timed {
		unit = "cycles/op"
	}
	failures := map[string][]gate.Failure{}
	for _, f := range r.Failures {
		failures[f.Row] = append(failures[f.Row], f)
	}
	key := filepath.Base(a.Path) + " " + filepath.Base(b.Path)
	for _, c := range drift.Counts(a, b, unit) {
		t := kcidbTest{Status: "PASS", StartTime: startTime(b), Environment: environment(b),
			Misc: map[string]any{"row": c.Name, "unit": unit, "a": c.A, "b": c.B, "a_file": filepath.Base(a.Path), "b_file": filepath.Base(b.Path)}}
		if fs := failures[c.Name]; len(fs) > 0 {
			t.Status = "FAIL"
			t.Misc["failures"] = fs
		}
		w.test(build, rowPath("bpfbench.gate", benchfile.ParseName(c.Name)), key, t)
	}
	t := kcidbTest{Status: "PASS", StartTime: startTime(b), Environment: environment(b),
		Misc: map[string]any{"kind": string(r.Kind), "rows": r.Rows, "failures": r.Failures, "notes": r.Notes, "a_file": filepath.Base(a.Path), "b_file": filepath.Base(b.Path)}}
	if !r.Passed() {
		t.Status = "FAIL"
	}
	w.test(build, "bpfbench.gate", key, t)
}

// drift adds a DONE test per row and unit of a comparison of two timed
// files, on B's build: B's change over A beyond the rows' shared shift.
func (w *kcidbWriter) drift(a, b *benchfile.File, aa [2]*benchfile.File, units []string) {
	build := w.build(b)
	key := filepath.Base(a.Path) + " " + filepath.Base(b.Path)
	for _, u := range units {
		s, floor, ok := comparison(a, b, aa, u)
		if !ok {
			continue
		}
		noise := map[string]bool{}
		for _, m := range s.Noise {
			noise[m.Name] = true
		}
		for _, m := range s.Moves() {
			t := kcidbTest{Status: "DONE", StartTime: startTime(b), Environment: environment(b),
				Number: &kcidbNumber{Value: m.Move},
				Misc: map[string]any{"row": m.Name, "unit": u, "move": num(m.Move), "p": num(m.P), "shift": num(s.Median),
					"beyond_noise": noise[m.Name], "a_file": filepath.Base(a.Path), "b_file": filepath.Base(b.Path)}}
			if floor != nil {
				t.Misc["floor"] = num(floor.Of(m.Name))
			}
			w.test(build, rowPath("bpfbench.drift", benchfile.ParseName(m.Name))+"."+unitPath(u), key, t)
		}
	}
}

func (w *kcidbWriter) write(out io.Writer) error { return encode(out, w.r) }

// all adds the rows and the verdicts of files.
func (w *kcidbWriter) all(files []*benchfile.File) {
	var timed, anatomies []*benchfile.File
	for _, f := range files {
		w.rows(f)
		if mechanism.IsAnatomy(f) {
			anatomies = append(anatomies, f)
		} else {
			timed = append(timed, f)
		}
	}
	w.verdicts(timed, anatomies)
}

// kcidbMode is what -kcidb was asked for.
type kcidbMode struct {
	origin      string
	gate, drift bool
	tolerance   float64
	aaDir       string
	all         bool
}

// runKCIDB writes the KCIDB report of files; 2 on bad input (no
// -origin, no results), 1 when -gate found B regressed.
func runKCIDB(m kcidbMode, files []*benchfile.File, stdout, stderr io.Writer) int {
	if !originRe.MatchString(m.origin) {
		fmt.Fprintf(stderr, "report: -kcidb needs -origin NAME, the CI system that submits the report (lower-case letters, digits and _, as KCIDB's origin): got %q\n", m.origin)
		return 2
	}
	if !slices.ContainsFunc(files, (*benchfile.File).HasResults) {
		var names []string
		for _, f := range files {
			names = append(names, f.Path)
		}
		fmt.Fprintf(stderr, "report: -kcidb: no results in %s: nothing to report\n", strings.Join(names, ", "))
		return 2
	}
	w := newKCIDB(m.origin)
	status := 0
	switch {
	case m.gate || m.drift:
		// -drift compares two files; -gate holds the second to the
		// first, and any more join the report's rows and verdicts (the
		// other cells of a CI's matrix).
		if m.drift && len(files) != 2 || len(files) < 2 {
			fmt.Fprintf(stderr, "report: -kcidb with -drift compares two files, with -gate holds B to A and takes more: not %d\n", len(files))
			return 2
		}
		a, b := files[0], files[1]
		aa, _ := drift.FindAA(m.aaDir, a)
		if m.drift && !a.Icount() && !mechanism.IsAnatomy(a) {
			units := drift.Units
			if m.all {
				units = drift.AllUnits
			}
			w.drift(a, b, aa, units)
		}
		r, err := gate.Check(a, b, gate.Options{Tolerance: m.tolerance, AA: aa})
		if err != nil {
			fmt.Fprintf(stderr, "report: -kcidb: %v\n", err)
			return 2
		}
		w.gate(a, b, r)
		if m.gate {
			w.all(files)
			if !r.Passed() {
				status = 1
			}
		} else {
			w.rows(a)
			w.rows(b)
		}
	default:
		w.all(files)
	}
	if err := w.write(stdout); err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 2
	}
	return status
}
