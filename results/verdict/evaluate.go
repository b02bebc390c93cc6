package verdict

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"bpfbench/bpf/units"
	"bpfbench/results/benchfile"
	"bpfbench/results/claims"
	"bpfbench/results/stat"
)

// An Outcome is a claim evaluated on one file, or one pair of files for a
// claim that needs two boots.
type Outcome struct {
	Claim *claims.Claim
	// Shape is set for the judgement of a claim's shape from instruction
	// counts (Claim.Shape), unset for its timing.
	Shape    bool
	Files    []*benchfile.File
	Verdict  Verdict
	Estimate stat.Estimate
	Reason   string
	Notes    []string
}

// ID is the claim's ID, with " shape" for a shape judgement.
func (o Outcome) ID() string {
	if o.Shape {
		return o.Claim.ID + " shape"
	}
	return o.Claim.ID
}

// A judgement is one way a claim is judged: its timing against the
// published figure, or its shape in instruction counts.
type judgement struct {
	shape   bool
	measure claims.Measure
	same    []string
}

// Evaluate checks claim c against the files: its timing, and its shape
// when it has one. A measurement that names no boot is evaluated on every
// file; one that does on every choice of files that satisfy its boots and
// agree on its Same labels, or found not measurable when no file has the
// boot. Files without any result take no part; when no file has one, the
// outcome says so.
func Evaluate(c *claims.Claim, files []*benchfile.File) []Outcome {
	var usable []*benchfile.File
	for _, f := range files {
		if f.HasResults() {
			usable = append(usable, f)
		}
	}
	if len(usable) == 0 {
		return []Outcome{{Claim: c, Files: files, Verdict: NoResults, Reason: noResults(files)}}
	}
	if c.Info != nil {
		// One outcome per distinct reading of the labels.
		var out []Outcome
		for _, f := range usable {
			why := c.Info(f)
			i := slices.IndexFunc(out, func(o Outcome) bool { return o.Reason == why })
			if i < 0 {
				out = append(out, Outcome{Claim: c, Verdict: NoFigure, Reason: why})
				i = len(out) - 1
			}
			out[i].Files = append(out[i].Files, f)
		}
		if len(out) == 1 && len(usable) == len(files) {
			out[0].Files = files
		}
		return out
	}
	out := judge(c, judgement{measure: c.Measure, same: c.Same}, usable, files)
	if c.Shape != nil {
		out = append(out, judge(c, judgement{shape: true, measure: c.Shape.Measure, same: c.Shape.Same}, usable, files)...)
	}
	return out
}

func noResults(files []*benchfile.File) string {
	var parts []string
	for _, f := range files {
		parts = append(parts, f.Stem())
	}
	if len(files) == 1 {
		return files[0].Stem() + " holds no results (no benchmark result lines)"
	}
	return "none of the files holds results (no benchmark result lines): " + strings.Join(parts, ", ")
}

// judge evaluates one judgement of c on the usable files (of all).
func judge(c *claims.Claim, j judgement, usable, all []*benchfile.File) []Outcome {
	sels := j.measure.Sels()
	var boots []*claims.Boot
	for _, s := range sels {
		if s.Boot != nil && !slices.Contains(boots, s.Boot) {
			boots = append(boots, s.Boot)
		}
	}
	if len(boots) == 0 {
		var out []Outcome
		for _, f := range usable {
			out = append(out, evaluateOn(c, j, map[*claims.Boot]*benchfile.File{nil: f}))
		}
		return prune(out, all)
	}
	candidates := make([][]*benchfile.File, len(boots))
	for i, b := range boots {
		var emulated []string // emulated files of the boot with the rows
		emulatedBoot := 0     // emulated files of the boot
		for _, f := range usable {
			if !b.Test(f) {
				continue
			}
			if !j.shape && f.Emulated() {
				emulatedBoot++
				if hasRows(f, sels) {
					emulated = append(emulated, noTiming(f))
				}
				continue
			}
			candidates[i] = append(candidates[i], f)
		}
		if len(candidates[i]) > 0 {
			continue
		}
		o := Outcome{Claim: c, Shape: j.shape, Files: all, Verdict: NotMeasurable}
		if emulatedBoot > 0 && len(emulated) == 0 && !slices.ContainsFunc(usable, func(f *benchfile.File) bool { return !f.Emulated() }) {
			// Only emulated files, those of the boot without the rows:
			// nothing to say but that.
			o.Verdict = NoData
			o.Reason = fmt.Sprintf("%s is not in it", sels[0])
			return []Outcome{o}
		}
		unlabelled := !slices.ContainsFunc(usable, func(f *benchfile.File) bool { return len(f.MissingLabels(b.Labels)) == 0 })
		switch {
		case unlabelled:
			o.Verdict = NoLabels
			o.Reason = fmt.Sprintf("needs %s, but %s: a results file tells its boot by its labels (make bench writes them)", b.Name, describeBoots(usable, b))
		case len(emulated) > 0:
			o.Verdict = NoTiming
			o.Reason = fmt.Sprintf("needs %s, and a timing verdict needs real (not emulated) kernels: %s", b.Name, emulated[0])
			if len(emulated) > 1 {
				o.Reason += fmt.Sprintf(" (and %d more such files)", len(emulated)-1)
			}
		default:
			// Not the kernel's doing: a file of the other boot is missing.
			// Its mechanism needs no real boot (docs/kernels.md#boot-options).
			o.Verdict = NeedsBoot
			o.Reason = fmt.Sprintf("needs %s (%s): give a results file from one as another argument; its mechanism needs no "+
				"real boot: an anatomy file of one (ANATOMY=1, make bootmatrix) is judged under Mechanisms", b.Name, describeBoots(usable, b))
		}
		return []Outcome{o}
	}
	var out []Outcome
	var mismatch string
	for _, pick := range product(candidates) {
		if len(boots) > 1 && slices.ContainsFunc(pick[1:], func(f *benchfile.File) bool { return f == pick[0] }) {
			continue // one file cannot be both boots
		}
		byBoot := map[*claims.Boot]*benchfile.File{}
		for i, b := range boots {
			byBoot[b] = pick[i]
		}
		if why := differ(j.same, pick); why != "" {
			mismatch = why
			continue
		}
		out = append(out, evaluateOn(c, j, byBoot))
	}
	if len(out) == 0 {
		why := "the files must differ only in the boot option in question, but " + mismatch
		if mismatch == "" {
			why = "needs two different files, one for each of " + boots[0].Name + " and " + boots[1].Name
		}
		return []Outcome{{Claim: c, Shape: j.shape, Files: all, Verdict: NotMeasurable, Reason: why}}
	}
	return prune(out, all)
}

// hasRows reports whether f has a row some selection wants, in f's units.
func hasRows(f *benchfile.File, sels []claims.Sel) bool {
	for _, s := range sels {
		if f.Icount() {
			s.Unit = benchfile.CountedUnit(s.Unit)
		}
		if _, _, err := f.Select(s.Sel); err == nil {
			return true
		}
	}
	return false
}

// prune drops the outcomes that only say a file has no data when another
// outcome says more, and merges them into one when none does.
func prune(out []Outcome, files []*benchfile.File) []Outcome {
	var kept []Outcome
	for _, o := range out {
		if o.Verdict != NoData {
			kept = append(kept, o)
		}
	}
	switch {
	case len(kept) > 0:
		return kept
	case len(out) < 2:
		return out
	}
	o := out[0]
	o.Files = files
	return []Outcome{o}
}

func evaluateOn(c *claims.Claim, j judgement, byBoot map[*claims.Boot]*benchfile.File) Outcome {
	o := Outcome{Claim: c, Shape: j.shape}
	var xs, within [][]float64
	for _, s := range j.measure.Sels() {
		f := byBoot[s.Boot]
		if !slices.Contains(o.Files, f) {
			o.Files = append(o.Files, f)
		}
		lookup := s
		if !j.shape && f.Icount() {
			// Look for the row as an instruction-count file names it, to
			// say why it gets no timing verdict rather than that it is
			// missing.
			lookup.Unit = benchfile.CountedUnit(s.Unit)
		}
		name, x, err := f.Select(lookup.Sel)
		var nm *benchfile.SkippedError
		switch {
		case errors.As(err, &nm):
			o.Verdict, o.Reason = NotMeasurable, nm.Reason
			return o
		case errors.Is(err, benchfile.ErrContended) && !j.shape:
			o.Verdict, o.Reason = NoTiming, strings.TrimPrefix(err.Error(), benchfile.ErrContended.Error()+": ")
			return o
		case errors.Is(err, benchfile.ErrNoData):
			o.Verdict, o.Reason = NoData, strings.TrimPrefix(err.Error(), benchfile.ErrNoData.Error()+": ")
			return o
		case err != nil:
			o.Verdict, o.Reason = NoData, err.Error()
			return o
		}
		if !j.shape {
			if why := noTiming(f); why != "" {
				o.Verdict, o.Reason = NoTiming, why
				if f.Icount() && c.Shape != nil {
					o.Reason += "; the claim's shape is judged from such files (" + c.ID + " shape)"
				}
				return o
			}
		}
		if failed := f.Failed[name.String()]; len(failed) > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s failed and are left out (%s)",
				len(failed), len(failed)+len(f.Runs[name.String()]), name.Short(), failed[0]))
		}
		if n, runs := f.DiscordantRuns(name.String()); n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s came from passes that disagree with the file and are left out (%s)", n, runs, name.Short(), f.PassSummary()))
		}
		if n, runs := f.SlowBase(name.String()); n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s ran with their paired base far slower than the family's and are left out", n, runs, name.Short()))
		}
		if n, runs := f.Contended(name.String()); n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s had %s and are left out", n, runs, name.Short(), units.TooFewFree()))
		}
		if n := notBound(f, name.String()); n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s were not receiver-bound (rx-bound=0: the generator or losses dominate)",
				n, len(f.Runs[name.String()]), name.Short()))
		}
		xs = append(xs, x)
		within = append(within, f.Within(lookup.Sel))
	}
	if len(o.Files) == 2 && o.Files[0].Label("kernel") != o.Files[1].Label("kernel") && !j.shape {
		o.Notes = append(o.Notes, fmt.Sprintf("the files come from different kernels (%s, %s): the difference includes whatever else changed between them",
			o.Files[0].Label("kernel"), o.Files[1].Label("kernel")))
	}
	if len(xs) == 1 {
		o.Estimate = stat.Summarize(xs[0], within[0])
	} else {
		o.Estimate = stat.Shift(xs[0], xs[1], within[0], within[1])
	}
	if j.shape {
		old := stat.Summarize(xs[len(xs)-1], nil).Center
		o.Verdict, o.Reason = DecideShape(c.Shape.Change, o.Estimate, old)
	} else {
		o.Verdict, o.Reason = Decide(c.Published, o.Estimate)
	}
	return o
}

// notBound counts the runs of name that say they did not measure the
// receiver (an attach run's rx-bound metric is 0).
func notBound(f *benchfile.File, name string) int {
	n := 0
	for _, r := range f.Runs[name] {
		if v, ok := r.Values["rx-bound"]; ok && v == 0 {
			n++
		}
	}
	return n
}

// product returns every choice of one element from each list.
func product(lists [][]*benchfile.File) [][]*benchfile.File {
	out := [][]*benchfile.File{nil}
	for _, l := range lists {
		var next [][]*benchfile.File
		for _, prefix := range out {
			for _, f := range l {
				next = append(next, append(slices.Clone(prefix), f))
			}
		}
		out = next
	}
	return out
}

// differ says which of labels the files disagree on, or "".
func differ(labels []string, files []*benchfile.File) string {
	for _, k := range labels {
		for _, f := range files[1:] {
			if f.Label(k) != files[0].Label(k) {
				return fmt.Sprintf("%s differs (%s vs %s)", k, files[0].Label(k), f.Label(k))
			}
		}
	}
	return ""
}

// describeBoots says, for each file, the labels boot b reads, or that
// the file lacks them.
func describeBoots(files []*benchfile.File, b *claims.Boot) string {
	var parts []string
	for _, f := range files {
		who := "this file"
		if len(files) > 1 {
			who = f.Stem()
		}
		if missing := f.MissingLabels(b.Labels); len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("%s has no label %s", who, strings.Join(missing, ", ")))
			continue
		}
		var ls []string
		for _, k := range b.Labels {
			ls = append(ls, k+"="+f.Label(k))
		}
		parts = append(parts, who+": "+strings.Join(ls, " "))
	}
	return strings.Join(parts, "; ")
}
