package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// A Verdict is what the measurement says about a published figure.
type Verdict int

const (
	// Confirmed: the measured interval overlaps the published range and
	// rules out the alternative (no effect, for a claimed effect; an
	// effect beyond the range, for a claimed absence of one).
	Confirmed Verdict = iota
	// Refuted: the measured interval and the published range do not
	// overlap.
	Refuted
	// Noise: the interval overlaps the published range but is too wide
	// to rule out the alternative.
	Noise
	// NotMeasurable: the files show the kernel cannot measure it (another
	// boot is needed, or the benchmark skipped saying why).
	NotMeasurable
	// NoData: the files have no runs of the benchmark that measures it.
	NoData
)

func (v Verdict) String() string {
	return [...]string{"confirmed", "refuted", "inside the noise", "not measurable on this kernel", "no data in this file"}[v]
}

// Decide applies the verdict rule. Let [lo, hi] be the 95% confidence
// interval of the measured value and [Lo, Hi] the range the published
// figure allows (Published).
//
//   - refuted when [lo, hi] and [Lo, Hi] are disjoint: the measurement
//     excludes every value the claim allows;
//   - for a claimed effect (published value not 0): confirmed when they
//     overlap and [lo, hi] excludes 0; inside the noise when [lo, hi]
//     includes 0, since then this measurement cannot tell the effect from
//     none (a 1.2 ns effect measured as 0.8 +- 1 ns is not a
//     confirmation);
//   - for a claimed absence of effect (published value 0): confirmed
//     when [lo, hi] lies inside [Lo, Hi], i.e. the measurement rules out
//     any effect bigger than the source could have missed; inside the
//     noise when it overlaps but reaches beyond.
//
// A measurement without an interval (one run, no per-run CI) overlaps
// everything and excludes nothing: inside the noise, never confirmed.
func Decide(p Published, e Estimate) (Verdict, string) {
	ci := fmt.Sprintf("the CI %s", interval(e.Lo, e.Hi))
	allowed := "[" + trim(p.Lo) + ", " + trim(p.Hi) + "]"
	switch {
	case e.Hi < p.Lo:
		return Refuted, fmt.Sprintf("%s lies below the published range %s", ci, allowed)
	case e.Lo > p.Hi:
		return Refuted, fmt.Sprintf("%s lies above the published range %s", ci, allowed)
	case !e.finite():
		return Noise, "no confidence interval: " + e.Method
	case p.Value != 0 && e.Lo <= 0 && e.Hi >= 0:
		return Noise, fmt.Sprintf("%s includes 0: an effect this size cannot be told from none here", ci)
	case p.Value != 0:
		return Confirmed, fmt.Sprintf("%s overlaps the published range %s and excludes 0", ci, allowed)
	case e.Lo >= p.Lo && e.Hi <= p.Hi:
		return Confirmed, fmt.Sprintf("%s lies inside the range the claim allows, %s", ci, allowed)
	default:
		return Noise, fmt.Sprintf("%s reaches beyond %s: too wide to rule out an effect", ci, allowed)
	}
}

// An Outcome is a claim evaluated on one file, or one pair of files for a
// claim that needs two boots.
type Outcome struct {
	Claim    *Claim
	Files    []*File
	Verdict  Verdict
	Estimate Estimate
	Reason   string
	Notes    []string
}

// Evaluate checks claim c against the files. A claim whose measurement
// names no boot is evaluated on every file; one that does is evaluated on
// every choice of files that satisfy its boots and agree on its Same
// labels, or found not measurable when no file has the boot.
func Evaluate(c *Claim, files []*File) []Outcome {
	sels := c.Measure.sels()
	var boots []*Boot
	for _, s := range sels {
		if s.Boot != nil && !slices.Contains(boots, s.Boot) {
			boots = append(boots, s.Boot)
		}
	}
	if len(boots) == 0 {
		var out []Outcome
		for _, f := range files {
			out = append(out, evaluateOn(c, map[*Boot]*File{nil: f}))
		}
		return once(out, files)
	}
	candidates := make([][]*File, len(boots))
	for i, b := range boots {
		for _, f := range files {
			if b.Test(f) {
				candidates[i] = append(candidates[i], f)
			}
		}
		if len(candidates[i]) == 0 {
			return []Outcome{{Claim: c, Files: files, Verdict: NotMeasurable,
				Reason: fmt.Sprintf("needs %s (%s): give a results file from one as another argument", b.Name, describeBoots(files))}}
		}
	}
	var out []Outcome
	var mismatch string
	for _, pick := range product(candidates) {
		byBoot := map[*Boot]*File{}
		for i, b := range boots {
			byBoot[b] = pick[i]
		}
		if why := differ(c.Same, pick); why != "" {
			mismatch = why
			continue
		}
		out = append(out, evaluateOn(c, byBoot))
	}
	if len(out) == 0 {
		return []Outcome{{Claim: c, Files: files, Verdict: NotMeasurable,
			Reason: "the files must differ only in the boot option in question, but " + mismatch}}
	}
	return once(out, files)
}

// once merges outcomes that all say the files have no data into one.
func once(out []Outcome, files []*File) []Outcome {
	if len(out) < 2 {
		return out
	}
	for _, o := range out {
		if o.Verdict != NoData {
			return out
		}
	}
	return []Outcome{{Claim: out[0].Claim, Files: files, Verdict: NoData, Reason: out[0].Reason}}
}

func evaluateOn(c *Claim, byBoot map[*Boot]*File) Outcome {
	o := Outcome{Claim: c}
	var xs, within [][]float64
	for _, s := range c.Measure.sels() {
		f := byBoot[s.Boot]
		if !slices.Contains(o.Files, f) {
			o.Files = append(o.Files, f)
		}
		if f.Emulated() {
			o.Verdict, o.Reason = NotMeasurable, f.Stem()+" comes from an emulated guest (virt: tcg): its timings show that the code ran, they are not measurements"
			return o
		}
		if why := f.ControlFails(); why != "" {
			o.Verdict, o.Reason = NotMeasurable, why
			return o
		}
		name, x, err := f.Select(s)
		var nm *notMeasurable
		switch {
		case errors.As(err, &nm):
			o.Verdict, o.Reason = NotMeasurable, nm.why
			return o
		case errors.Is(err, errNoData):
			o.Verdict, o.Reason = NoData, strings.TrimPrefix(err.Error(), errNoData.Error()+": ")
			return o
		case err != nil:
			o.Verdict, o.Reason = NoData, err.Error()
			return o
		}
		if failed := f.Failed[name.String()]; len(failed) > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s failed and are left out (%s)",
				len(failed), len(failed)+len(f.Runs[name.String()]), name.Short(), failed[0]))
		}
		if n := notBound(f, name.String()); n > 0 {
			o.Notes = append(o.Notes, fmt.Sprintf("%d of %d runs of %s were not receiver-bound (rx-bound=0: the generator or losses dominate)",
				n, len(f.Runs[name.String()]), name.Short()))
		}
		xs = append(xs, x)
		within = append(within, f.Within(s))
	}
	if len(o.Files) == 2 && o.Files[0].Label("kernel") != o.Files[1].Label("kernel") {
		o.Notes = append(o.Notes, fmt.Sprintf("the files come from different kernels (%s, %s): the difference includes whatever else changed between them",
			o.Files[0].Label("kernel"), o.Files[1].Label("kernel")))
	}
	if len(xs) == 1 {
		o.Estimate = Summarize(xs[0], within[0])
	} else {
		o.Estimate = Shift(xs[0], xs[1], within[0], within[1])
	}
	o.Verdict, o.Reason = Decide(c.Published, o.Estimate)
	return o
}

// notBound counts the runs of name that say they did not measure the
// receiver (an attach run's rx-bound metric is 0).
func notBound(f *File, name string) int {
	n := 0
	for _, r := range f.Runs[name] {
		if v, ok := r.Values["rx-bound"]; ok && v == 0 {
			n++
		}
	}
	return n
}

// product returns every choice of one element from each list.
func product(lists [][]*File) [][]*File {
	out := [][]*File{nil}
	for _, l := range lists {
		var next [][]*File
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
func differ(labels []string, files []*File) string {
	for _, k := range labels {
		for _, f := range files[1:] {
			if f.Label(k) != files[0].Label(k) {
				return fmt.Sprintf("%s differs (%s vs %s)", k, files[0].Label(k), f.Label(k))
			}
		}
	}
	return ""
}

func describeBoots(files []*File) string {
	var parts []string
	for _, f := range files {
		var ls []string
		for _, k := range bootLabels[1:] {
			ls = append(ls, k+"="+f.Label(k))
		}
		who := "this file"
		if len(files) > 1 {
			who = f.Stem()
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
