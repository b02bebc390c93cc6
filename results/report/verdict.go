package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"
)

// A Verdict is what the files say about a published figure.
type Verdict int

// The verdicts. The first eight judge a measurement; when each is given
// is in timingRules and shapeRules, and nowhere else. The others say why
// there is no judgement.
const (
	// NoInterval: the estimate has no interval (one run without a
	// per-run CI): it is printed, not judged.
	NoInterval Verdict = iota
	// Timing verdicts: a measured interval against a published range.
	Within     // the interval lies inside the published range
	Overlaps   // the interval overlaps the range and reaches beyond it
	Outside    // the interval and the range do not overlap
	CannotTell // a claimed effect whose interval includes 0
	// Shape verdicts: a change of path length in instruction counts.
	InShape      // the interval lies on the claimed side
	NotInShape   // the interval lies on the other side
	ShapeUnclear // the interval straddles the line
	// No judgement.
	NoFigure      // the claim has no published figure
	NoTiming      // the files that have the data may not be timed
	NotMeasurable // the files show the kernel cannot measure it
	NoLabels      // no file has the labels that say which boot it is
	NoData        // the files have no runs of what measures it
	NoResults     // the files hold no results at all
)

var verdictNames = [...]string{
	NoInterval:    "no interval",
	Within:        "within the published range",
	Overlaps:      "overlaps the published range",
	Outside:       "outside the published range",
	CannotTell:    "cannot tell from zero",
	InShape:       "in shape",
	NotInShape:    "not in shape",
	ShapeUnclear:  "cannot tell the shape",
	NoFigure:      "no published figure",
	NoTiming:      "no timing verdict",
	NotMeasurable: "not measurable on this kernel",
	NoLabels:      "labels missing",
	NoData:        "no data in this file",
	NoResults:     "no results in this file",
}

func (v Verdict) String() string { return verdictNames[v] }

// judged reports whether v judges a measurement (the outcome has an
// estimate).
func (v Verdict) judged() bool { return v <= ShapeUnclear }

// A rule gives its verdict when its test holds of the measured interval
// [e.Lo, e.Hi] and the range [lo, hi] the claim allows; the first rule
// of its table that holds decides. Its text is what docs/report.md and the
// report's footer print: the one statement of the rule.
type rule struct {
	verdict Verdict
	text    string
	test    func(e stat.Estimate, value, lo, hi float64) bool
}

// noIntervalRule comes first in both tables: without an interval there
// is nothing to hold against a range or a side.
var noIntervalRule = rule{NoInterval, "the estimate has no interval (one run that reported no per-run interval, or too few runs for one): its value is printed, not judged",
	func(e stat.Estimate, _, _, _ float64) bool { return !e.Finite() }}

// timingRules judge a measured interval against the published range
// [Lo, Hi] around the published value (Published).
var timingRules = []rule{
	noIntervalRule,
	{Outside, "the interval and the published range are disjoint: the measurement excludes every value the claim allows",
		func(e stat.Estimate, _, lo, hi float64) bool { return e.Hi < lo || e.Lo > hi }},
	{CannotTell, "for a claimed effect (published value not 0), the interval includes 0: this measurement cannot tell the effect from none, wherever the range lies",
		func(e stat.Estimate, v, _, _ float64) bool { return v != 0 && e.Lo <= 0 && e.Hi >= 0 }},
	{Within, "the interval lies inside the published range: every value the measurement allows, the claim allows",
		func(e stat.Estimate, _, lo, hi float64) bool { return e.Lo >= lo && e.Hi <= hi }},
	{Overlaps, "otherwise: the interval overlaps the range and reaches beyond it, so the measurement allows values the claim does not (for a claimed absence of effect: it cannot rule out an effect the source would have seen)",
		func(stat.Estimate, float64, float64, float64) bool { return true }},
}

// shapeRules judge a change of instruction count (the newer kernel minus
// the older) against the side the claim expects: below 0 for a path that
// gets shorter, inside ±tol for one that stays (lo and hi are the
// bounds of that side: -Inf and 0, or -tol and tol).
var shapeRules = []rule{
	noIntervalRule,
	{InShape, "the interval lies on the claimed side: below 0 where the claim has the path get shorter, inside ±4% of the older kernel's count where it has it unchanged",
		func(e stat.Estimate, _, lo, hi float64) bool {
			if math.IsInf(lo, -1) {
				return e.Hi < hi
			}
			return e.Lo >= lo && e.Hi <= hi
		}},
	{NotInShape, "the interval lies wholly off the claimed side: at or above 0 for a path claimed shorter, beyond ±4% for a path claimed unchanged",
		func(e stat.Estimate, _, lo, hi float64) bool {
			if math.IsInf(lo, -1) {
				return e.Lo >= hi
			}
			return e.Hi < lo || e.Lo > hi
		}},
	{ShapeUnclear, "otherwise: the interval straddles the edge of the claimed side",
		func(stat.Estimate, float64, float64, float64) bool { return true }},
}

// decide applies rules in order.
func decide(rules []rule, e stat.Estimate, value, lo, hi float64) Verdict {
	for _, r := range rules {
		if r.test(e, value, lo, hi) {
			return r.verdict
		}
	}
	panic("decide: no rule applies")
}

// Decide judges a measured estimate against a published figure by
// timingRules, and says why.
func Decide(p Published, e stat.Estimate) (Verdict, string) {
	v := decide(timingRules, e, p.Value, p.Lo, p.Hi)
	ci := "the CI " + interval(e.Lo, e.Hi)
	allowed := "[" + trim(p.Lo) + ", " + trim(p.Hi) + "]"
	switch v {
	case NoInterval:
		return v, fmt.Sprintf("no CI (%s): %s is not held against %s", e.Method, num(e.Center), allowed)
	case Outside:
		where := "below"
		if e.Lo > p.Hi {
			where = "above"
		}
		return v, fmt.Sprintf("%s lies %s the published range %s", ci, where, allowed)
	case CannotTell:
		return v, fmt.Sprintf("%s includes 0: an effect this size cannot be told from none here", ci)
	case Within:
		return v, fmt.Sprintf("%s lies inside the published range %s", ci, allowed)
	}
	if p.Value == 0 {
		return v, fmt.Sprintf("%s overlaps %s but reaches beyond it: too wide to rule out an effect", ci, allowed)
	}
	return v, fmt.Sprintf("%s overlaps the published range %s and reaches beyond it", ci, allowed)
}

// DecideShape judges a change of instruction count e (newer minus older
// kernel, or the kernel with a feature minus the one without) by
// shapeRules: for a claimed shortening or lengthening against 0, for a
// claimed absence of change against ±4% of old, the other kernel's count.
func DecideShape(change Change, e stat.Estimate, old float64) (Verdict, string) {
	lo, hi := math.Inf(-1), 0.0
	tol := rateNoise * math.Abs(old)
	switch change {
	case Unchanged:
		lo, hi = -tol, tol
	case Longer:
		lo, hi = 0, math.Inf(1)
	}
	v := decide(shapeRules, e, 0, lo, hi)
	ci := "the CI " + interval(e.Lo, e.Hi)
	band := fmt.Sprintf("±%s instructions (4%% of the older kernel's %s)", num(tol), num(old))
	switch {
	case v == NoInterval:
		return v, fmt.Sprintf("no CI (%s): %s is not held against the claimed side", e.Method, num(e.Center))
	case change == Shorter && v == InShape:
		return v, ci + " lies below 0: the path got shorter"
	case change == Shorter && v == NotInShape:
		return v, ci + " lies at or above 0: the path did not get shorter"
	case change == Shorter:
		return v, ci + " includes 0: shorter or not, this cannot tell"
	case change == Longer && v == InShape:
		return v, ci + " lies above 0: the path got longer"
	case change == Longer && v == NotInShape:
		return v, ci + " lies at or below 0: the path did not get longer"
	case change == Longer:
		return v, ci + " includes 0: longer or not, this cannot tell"
	case v == InShape:
		return v, ci + " lies within " + band + ": the path kept its length"
	case v == NotInShape:
		return v, ci + " lies wholly outside " + band + ": the path's length changed"
	}
	return v, ci + " reaches past " + band + ": unchanged or not, this cannot tell"
}

// A Change is what a shape claim expects of a path's instruction count.
type Change int

const (
	Shorter   Change = iota // the newer kernel's path is shorter
	Unchanged               // it stays within ±4%
	Longer                  // the path gets longer (a check added)
)

func (c Change) String() string {
	switch c {
	case Unchanged:
		return "unchanged"
	case Longer:
		return "longer"
	}
	return "shorter"
}

// An Outcome is a claim evaluated on one file, or one pair of files for a
// claim that needs two boots.
type Outcome struct {
	Claim *Claim
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
	measure Measure
	same    []string
}

// Evaluate checks claim c against the files: its timing, and its shape
// when it has one. A measurement that names no boot is evaluated on every
// file; one that does on every choice of files that satisfy its boots and
// agree on its Same labels, or found not measurable when no file has the
// boot. Files without any result take no part; when no file has one, the
// outcome says so.
func Evaluate(c *Claim, files []*benchfile.File) []Outcome {
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
func judge(c *Claim, j judgement, usable, all []*benchfile.File) []Outcome {
	sels := j.measure.sels()
	var boots []*Boot
	for _, s := range sels {
		if s.Boot != nil && !slices.Contains(boots, s.Boot) {
			boots = append(boots, s.Boot)
		}
	}
	if len(boots) == 0 {
		var out []Outcome
		for _, f := range usable {
			out = append(out, evaluateOn(c, j, map[*Boot]*benchfile.File{nil: f}))
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
			o.Reason = fmt.Sprintf("needs %s (%s): give a results file from one as another argument", b.Name, describeBoots(usable, b))
		}
		return []Outcome{o}
	}
	var out []Outcome
	var mismatch string
	for _, pick := range product(candidates) {
		if len(boots) > 1 && slices.ContainsFunc(pick[1:], func(f *benchfile.File) bool { return f == pick[0] }) {
			continue // one file cannot be both boots
		}
		byBoot := map[*Boot]*benchfile.File{}
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
func hasRows(f *benchfile.File, sels []Sel) bool {
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

func evaluateOn(c *Claim, j judgement, byBoot map[*Boot]*benchfile.File) Outcome {
	o := Outcome{Claim: c, Shape: j.shape}
	var xs, within [][]float64
	for _, s := range j.measure.sels() {
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
		if n, runs := f.Contended(name.String()); n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s were measured on a contended core (contended-frac above %.1f) and are left out", n, runs, name.Short(), benchfile.MaxContended))
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
func describeBoots(files []*benchfile.File, b *Boot) string {
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

// interval formats [lo, hi].
func interval(lo, hi float64) string {
	return "[" + num(lo) + ", " + num(hi) + "]"
}

// num formats a value in ns: two decimals below 100, one above, ∞ for
// no bound.
func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+∞"
	case math.IsInf(v, -1):
		return "-∞"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
