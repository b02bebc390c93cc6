// Package verdict judges the published figures of package claims against
// results files, and prints the report that make report shows.
//
// Evaluate picks, for each claim, the files whose labels give the boots
// it needs, reads the rows it measures (benchfile), estimates the quantity
// with its interval (stat) and decides. Each rule of a decision is stated
// once, as data with its text (timingRules, shapeRules), so that the
// report's footer and docs/report.md print the rule the code applies.
// When no judgement is possible the verdict says why: no figure, no
// timing from an emulated or instruction-count file or one whose A/A
// control fails (control.go), not measurable on this kernel, no labels,
// no data, no results.
package verdict

import (
	"fmt"
	"math"

	"bpfbench/results/claims"
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
	NeedsBoot     // the claim needs a file of another boot, which none is
	NoLabels      // no file has the labels that say which boot it is
	NoData        // the files have no runs of what measures it
	NoResults     // the files hold no results at all
	numVerdicts
)

var verdictNames = [numVerdicts]string{
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
	NeedsBoot:     "needs another boot",
	NoLabels:      "labels missing",
	NoData:        "no data in this file",
	NoResults:     "no results in this file",
}

// String is the verdict as the report prints it.
func (v Verdict) String() string { return verdictNames[v] }

// Judged reports whether v judges a measurement: the outcome has an
// estimate.
func (v Verdict) Judged() bool {
	switch v {
	case NoInterval, Within, Overlaps, Outside, CannotTell, InShape, NotInShape, ShapeUnclear:
		return true
	}
	return false
}

// noWords is the reason a decision gives for a verdict its switch has
// no words of its own for: a test fails on it.
func noWords(v Verdict) string { return fmt.Sprintf("%s (no words of its own for this verdict)", v) }

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
// [Lo, Hi] around the published value (claims.Published).
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
	{InShape, "the interval lies on the claimed side: below 0 where the claim has the path get shorter, above 0 where longer, inside ±4% of the older kernel's count where it has it unchanged",
		func(e stat.Estimate, _, lo, hi float64) bool {
			switch {
			case math.IsInf(lo, -1): // shorter: below 0
				return e.Hi < hi
			case math.IsInf(hi, 1): // longer: above 0
				return e.Lo > lo
			}
			return e.Lo >= lo && e.Hi <= hi
		}},
	{NotInShape, "the interval lies wholly off the claimed side: at or above 0 for a path claimed shorter, below 0 for one claimed longer, beyond ±4% for a path claimed unchanged",
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
func Decide(p claims.Published, e stat.Estimate) (Verdict, string) {
	v := decide(timingRules, e, p.Value, p.Lo, p.Hi)
	ci := "the CI " + interval(e.Lo, e.Hi)
	allowed := "[" + stat.FormatTrim(p.Lo) + ", " + stat.FormatTrim(p.Hi) + "]"
	switch v {
	case NoInterval:
		return v, fmt.Sprintf("no CI (%s): %s is not held against %s", e.Method, stat.Format(e.Center), allowed)
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
	case Overlaps:
		if p.Value == 0 {
			return v, fmt.Sprintf("%s overlaps %s but reaches beyond it: too wide to rule out an effect", ci, allowed)
		}
		return v, fmt.Sprintf("%s overlaps the published range %s and reaches beyond it", ci, allowed)
	}
	return v, noWords(v)
}

// DecideShape judges a change of instruction count e (newer minus older
// kernel, or the kernel with a feature minus the one without) by
// shapeRules: for a claimed shortening or lengthening against 0, for a
// claimed absence of change against ±4% of old, the other kernel's count.
func DecideShape(change claims.Change, e stat.Estimate, old float64) (Verdict, string) {
	lo, hi := math.Inf(-1), 0.0
	tol := claims.RateNoise * math.Abs(old)
	switch change {
	case claims.Unchanged:
		lo, hi = -tol, tol
	case claims.Longer:
		lo, hi = 0, math.Inf(1)
	}
	v := decide(shapeRules, e, 0, lo, hi)
	ci := "the CI " + interval(e.Lo, e.Hi)
	band := fmt.Sprintf("±%s instructions (4%% of the older kernel's %s)", stat.Format(tol), stat.Format(old))
	if v == NoInterval {
		return v, fmt.Sprintf("no CI (%s): %s is not held against the claimed side", e.Method, stat.Format(e.Center))
	}
	words := map[claims.Change]map[Verdict]string{
		claims.Shorter: {
			InShape:      " lies below 0: the path got shorter",
			NotInShape:   " lies at or above 0: the path did not get shorter",
			ShapeUnclear: " includes 0: shorter or not, this cannot tell",
		},
		claims.Longer: {
			InShape:      " lies above 0: the path got longer",
			NotInShape:   " lies below 0: the path did not get longer",
			ShapeUnclear: " includes 0: longer or not, this cannot tell",
		},
		claims.Unchanged: {
			InShape:      " lies within " + band + ": the path kept its length",
			NotInShape:   " lies wholly outside " + band + ": the path's length changed",
			ShapeUnclear: " reaches past " + band + ": unchanged or not, this cannot tell",
		},
	}
	if w, ok := words[change][v]; ok {
		return v, ci + w
	}
	return v, noWords(v)
}
