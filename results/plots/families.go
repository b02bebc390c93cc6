package plots

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Write draws, for the families f has data for, the curves the claims
// rest on, as SVG files named <stem>-<what>.svg in dir (default: next to
// f). Every point is the median of the runs (one per -count) with its
// confidence interval as error bar, as Summarize computes them. It
// returns the files written.
func Write(f *benchfile.File, dir string) ([]string, error) {
	if dir == "" {
		return nil, errNoDir
	}
	figs, err := figures(f)
	var written []string
	for _, fig := range figs {
		svg, err := fig.render()
		if err != nil {
			return written, fmt.Errorf("%s: %w", fig.what, err)
		}
		path := filepath.Join(dir, f.Stem()+"-"+fig.what+".svg")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return written, err
		}
		if err := os.WriteFile(path, svg, 0o644); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, err
}

// errNoDir is a plot asked for without a directory: the caller names
// one (the report's -plotdir), so that plots never land beside their
// inputs.
var errNoDir = errors.New("no directory to write plots into")

// figures returns the figures f has data for, named by what they show
// (dispatcher, trampoline, freplace, tailcall, attach).
func figures(f *benchfile.File) ([]figure, error) {
	var figs []figure
	for _, d := range []struct {
		what string
		draw func(*benchfile.File) (figure, error)
	}{
		{"dispatcher", dispatcherPlots},
		{"trampoline", curvePlots(curve{
			family: "BenchmarkTrampoline", x: "progs",
			title: "fentry/fexit programs on an XDP program", xlabel: "tracing programs attached to the XDP program",
			keep: func(n benchfile.Name) bool { return n.Keys["target"] == "xdp" },
		})},
		{"freplace", curvePlots(curve{
			family: "BenchmarkTrampoline", x: "chain",
			title: "libxdp-style freplace chains", xlabel: "programs in the chain",
			keep: func(n benchfile.Name) bool { return n.Keys["target"] == "xdp" },
		})},
		{"tailcall", curvePlots(curve{
			family: "BenchmarkCall", x: "hops",
			title: "tail-call chains", xlabel: "tail calls in the chain (hops)",
			ref: func(benchfile.Name) bool { return true },
		})},
		{"attach", attachPlots},
	} {
		fig, err := d.draw(f)
		if err != nil {
			return figs, fmt.Errorf("%s: %w", d.what, err)
		}
		if len(fig.panels) == 0 {
			continue
		}
		fig.what = d.what
		figs = append(figs, fig)
	}
	return figs, nil
}

// estimate summarises one sub-benchmark's unit in f, or reports false.
func estimate(f *benchfile.File, name, unit string) (stat.Estimate, bool) {
	runs := f.Runs[name]
	xs, within := benchfile.Values(runs, unit), benchfile.Values(runs, benchfile.CIUnit(unit))
	if len(xs) == 0 {
		return stat.Estimate{}, false
	}
	if len(within) != len(xs) {
		within = nil
	}
	return stat.Summarize(xs, within), true
}

// names returns f's sub-benchmarks of family satisfying keep.
func names(f *benchfile.File, family string, keep func(benchfile.Name) bool) []benchfile.Name {
	var out []benchfile.Name
	for _, n := range f.Names {
		nm := f.Runs[n][0].Name
		if nm.Family == family && keep(nm) {
			out = append(out, nm)
		}
	}
	return out
}

// level orders the dispatcher levels: k<N> by N, then full.
func level(v string) (float64, bool) {
	if v == "full" {
		return math.Inf(1), true
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(v, "k")); err == nil && strings.HasPrefix(v, "k") {
		return float64(n), true
	}
	return 0, false
}

// dispatcherPlots draws BenchmarkDispatcher: cost against occupancy, one
// line per filler mode, both starting from k0 (the program alone), with
// the plain indirect call (prog=tc) as a reference. The upper panel is
// the paired delta to k0, which the machine's speed flips cancel out of;
// the lower is ns/op itself.
func dispatcherPlots(f *benchfile.File) (figure, error) {
	xdp := names(f, "BenchmarkDispatcher", func(n benchfile.Name) bool {
		_, ok := level(n.Keys["dispatcher"])
		return ok && n.Keys["prog"] == "xdp"
	})
	if len(xdp) == 0 {
		return figure{}, nil
	}
	var levels []string
	for _, n := range xdp {
		if !slices.Contains(levels, n.Keys["dispatcher"]) {
			levels = append(levels, n.Keys["dispatcher"])
		}
	}
	sort.Slice(levels, func(i, j int) bool {
		a, _ := level(levels[i])
		b, _ := level(levels[j])
		return a < b
	})
	ticks := make([]string, len(levels))
	for i, l := range levels {
		ticks[i] = strings.TrimPrefix(l, "k")
		if l == "full" {
			ticks[i] = "full (48)"
		}
	}
	var fills []string
	for _, n := range xdp {
		if fl := n.Keys["fill"]; fl != "none" && !slices.Contains(fills, fl) {
			fills = append(fills, fl)
		}
	}
	title := titled(f, fmt.Sprintf("XDP dispatcher occupancy: kernel %s, retpoline %s", f.Label("kernel"), f.Label("retpoline")))
	xlabel := "other XDP programs in the dispatcher (full: 48, the measured one gets no slot)"
	var panels []panel
	cs := colors{}
	for _, panel := range []struct {
		unit, ylabel, title string
	}{
		{"delta-ns/op", "ns/op over k0 (paired)", title},
		{"ns/op", "ns/op", "absolute ns/op, each row measured on its own (the machine's drift mixes in)"},
	} {
		var ss []series
		for i, fl := range fills {
			s := series{label: "fill=" + fl + " (median, CI)"}
			measured := 0 // points other than the baseline's made-up 0
			off := 0.12 * (float64(i) - float64(len(fills)-1)/2)
			for _, n := range xdp {
				fn := n.Keys["fill"]
				if fn != fl && fn != "none" {
					continue
				}
				x := float64(slices.Index(levels, n.Keys["dispatcher"]))
				e, ok := estimate(f, n.String(), panel.unit)
				if ok {
					measured++
				} else if panel.unit == "delta-ns/op" && fn == "none" {
					// The baseline has no delta: it is 0 by definition.
					e, ok = stat.Estimate{Method: "baseline"}, true
				}
				if ok {
					s.pts = append(s.pts, point{x + off, e})
				}
			}
			sort.Slice(s.pts, func(i, j int) bool { return s.pts[i].x < s.pts[j].x })
			if measured > 0 {
				ss = append(ss, s)
			}
		}
		var refs []ref
		if e, ok := estimate(f, "BenchmarkDispatcher/dispatcher=none/fill=none/prog=tc", panel.unit); ok {
			refs = append(refs, ref{fmt.Sprintf("indirect call, no dispatcher (prog=tc): %.2f", e.Center), e.Center})
		}
		if len(ss) == 0 {
			continue
		}
		pn, err := linePlot(panel.title, xlabel, panel.ylabel, categorical(ticks), ss, refs, cs)
		if err != nil {
			return figure{}, err
		}
		panels = append(panels, pn)
	}
	return figure{panels: panels}, nil
}

// A curve is a family's cost against a numeric key.
type curve struct {
	family, x     string
	title, xlabel string
	// keep selects the family's rows that belong on the plot (nil: all
	// with a numeric x). A row at x=0 is the baseline every line starts
	// from.
	keep func(benchfile.Name) bool
	// ref selects rows without x drawn as horizontal reference lines.
	ref func(benchfile.Name) bool
}

// curvePlots returns a drawer of a curve: one line per combination of the
// keys other than x that vary, in the paired delta to the family's
// baseline (when the family reports one) and in ns/op.
func curvePlots(c curve) func(*benchfile.File) (figure, error) {
	return func(f *benchfile.File) (figure, error) {
		ns := names(f, c.family, func(n benchfile.Name) bool {
			_, err := strconv.Atoi(n.Keys[c.x])
			return err == nil && (c.keep == nil || c.keep(n))
		})
		if len(ns) == 0 {
			return figure{}, nil
		}
		// A linear axis: a cost per program or per hop is then a straight
		// line, its slope the increment.
		var xs []int
		var zero []benchfile.Name
		for _, n := range ns {
			v, _ := strconv.Atoi(n.Keys[c.x])
			if !slices.Contains(xs, v) {
				xs = append(xs, v)
			}
			if v == 0 {
				zero = append(zero, n)
			}
		}
		slices.Sort(xs)
		var ticks plot.ConstantTicks
		for _, v := range xs {
			ticks = append(ticks, plot.Tick{Value: float64(v), Label: strconv.Itoa(v)})
		}
		// Keys other than x that vary among the lines name them.
		varying := map[string]bool{}
		for _, n := range ns {
			for k, v := range n.Keys {
				if k != c.x && v != ns[0].Keys[k] {
					varying[k] = true
				}
			}
		}
		lineOf := func(n benchfile.Name) string {
			var parts []string
			for _, k := range n.Order {
				if varying[k] {
					parts = append(parts, k+"="+n.Keys[k])
				}
			}
			if len(parts) > 0 {
				return strings.Join(parts, " ")
			}
			// One line: name it by its keys other than x.
			for _, k := range n.Order {
				if k != c.x {
					parts = append(parts, k+"="+n.Keys[k])
				}
			}
			return strings.Join(parts, " ")
		}
		var refs []benchfile.Name
		if c.ref != nil {
			refs = names(f, c.family, func(n benchfile.Name) bool { _, has := n.Keys[c.x]; return !has && c.ref(n) })
		}
		var panels []panel
		cs := colors{}
		for _, panel := range []struct{ unit, ylabel, title string }{
			{"delta-ns/op", "ns/op over the baseline (paired)", ""},
			{"ns/op", "ns/op", "absolute ns/op"},
		} {
			// The baseline at x=0 starts every line; its delta is 0.
			var base *point
			if len(zero) == 1 {
				if e, ok := estimate(f, zero[0].String(), panel.unit); ok {
					base = &point{0, e}
				} else if panel.unit == "delta-ns/op" {
					base = &point{0, stat.Estimate{Method: "baseline"}}
				}
			}
			bySeries := map[string]*series{}
			var order []string
			for _, n := range ns {
				v, _ := strconv.Atoi(n.Keys[c.x])
				if v == 0 && len(zero) == 1 {
					continue
				}
				e, ok := estimate(f, n.String(), panel.unit)
				if !ok {
					continue
				}
				l := lineOf(n)
				if bySeries[l] == nil {
					bySeries[l] = &series{label: l}
					if base != nil {
						bySeries[l].pts = points{*base}
					}
					order = append(order, l)
				}
				bySeries[l].pts = append(bySeries[l].pts, point{float64(v), e})
			}
			if len(order) == 0 {
				continue
			}
			var ss []series
			for _, l := range order {
				s := bySeries[l]
				sort.Slice(s.pts, func(i, j int) bool { return s.pts[i].x < s.pts[j].x })
				ss = append(ss, *s)
			}
			var rs []ref
			for _, r := range refs {
				if e, ok := estimate(f, r.String(), panel.unit); ok {
					rs = append(rs, ref{fmt.Sprintf("%s: %.2f", r.Short(), e.Center), e.Center})
				}
			}
			t := panel.title
			if len(panels) == 0 {
				t = titled(f, fmt.Sprintf("%s (kernel %s)", c.title, f.Label("kernel")))
			}
			pn, err := linePlot(t, c.xlabel, panel.ylabel, ticks, ss, rs, cs)
			if err != nil {
				return figure{}, err
			}
			panels = append(panels, pn)
		}
		return figure{panels: panels}, nil
	}
}

// attachPlots draws BenchmarkAttach: every variant's packet rate, and its
// receiver's cost per packet, as horizontal bars with error bars. A bar
// is named by the values of the keys that vary among the rows, in the
// order the y axis label gives; the generator alone (action=none) by
// that.
func attachPlots(f *benchfile.File) (figure, error) {
	type bar struct {
		label string
		e     stat.Estimate
	}
	rows := names(f, "BenchmarkAttach", func(benchfile.Name) bool { return true })
	if len(rows) == 0 {
		return figure{}, nil
	}
	var keys []string // the keys that vary, in name order
	for _, k := range rows[0].Order {
		for _, n := range rows[1:] {
			if n.Keys[k] != rows[0].Keys[k] {
				keys = append(keys, k)
				break
			}
		}
	}
	label := func(n benchfile.Name) string {
		if n.Keys["action"] == "none" {
			return "generator alone"
		}
		var vs []string
		for _, k := range keys {
			vs = append(vs, n.Keys[k])
		}
		if len(vs) == 0 {
			return n.Short()
		}
		return strings.Join(vs, " / ")
	}
	var panels []panel
	for _, pnl := range []struct {
		unit, xlabel, title string
		scale               float64
	}{
		{"capacity-pps", "Mpps the generating CPU sustains (generator and receiver share it)",
			fmt.Sprintf("BenchmarkAttach: packets through XDP on veth (kernel %s)", f.Label("kernel")), 1e-6},
		{"rx-ns/pkt", "the receiver's ns per packet (rx-ns/pkt)", "", 1},
	} {
		var bars []bar
		for _, n := range rows {
			e, ok := estimate(f, n.String(), pnl.unit)
			if !ok && pnl.unit == "capacity-pps" {
				// Files from before the unit was named for what it is.
				e, ok = estimate(f, n.String(), "pps")
			}
			if ok {
				e.Center, e.Lo, e.Hi = e.Center*pnl.scale, e.Lo*pnl.scale, e.Hi*pnl.scale
				bars = append(bars, bar{label(n), e})
			}
		}
		if len(bars) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = titled(f, pnl.title)
		if pnl.title == "" && len(panels) == 0 {
			p.Title.Text = titled(f, fmt.Sprintf("BenchmarkAttach: the receiver's cost (kernel %s)", f.Label("kernel")))
		}
		p.Title.Padding = vg.Points(6)
		p.X.Label.Text = pnl.xlabel
		p.X.Tick.Marker = trimmedTicks{}
		p.Y.Label.Text = strings.Join(keys, " / ")
		p.Y.Label.TextStyle.Font.Size = vg.Points(10)
		// The file's first row on top: NominalY counts from the bottom.
		slices.Reverse(bars)
		vals := make(plotter.Values, len(bars))
		var pts swappedPoints
		var labels []string
		for i, b := range bars {
			vals[i] = b.e.Center
			pts = append(pts, point{float64(i), b.e})
			labels = append(labels, b.label)
		}
		bc, err := plotter.NewBarChart(vals, vg.Points(10))
		if err != nil {
			return figure{}, err
		}
		bc.Horizontal = true
		bc.Color = palette[len(panels)%len(palette)]
		bc.LineStyle.Width = 0
		eb, err := plotter.NewXErrorBars(pts)
		if err != nil {
			return figure{}, err
		}
		eb.CapWidth = vg.Points(6)
		p.Add(plotter.NewGrid(), bc, eb)
		p.Y.Tick.Label.Font.Size = vg.Points(9)
		for i, l := range labels {
			labels[i] = padRight(l, p.Y.Tick.Label)
		}
		p.NominalY(labels...)
		// Start at 0 and end on a round number past the last error bar.
		hi := 0.0
		for _, b := range bars {
			hi = math.Max(hi, b.e.Center)
			if b.e.Finite() {
				hi = math.Max(hi, b.e.Hi)
			}
		}
		p.X.Min = 0
		if hi > 0 {
			step := math.Pow(10, math.Floor(math.Log10(hi))) / 2
			p.X.Max = (math.Floor(hi/step) + 1) * step
		}
		panels = append(panels, panel{p: p, height: vg.Length(len(bars))*vg.Inch/4 + 1.3*vg.Inch})
	}
	return figure{panels: panels}, nil
}
