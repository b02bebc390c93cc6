package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plots draws, for the families f has data for, the curves the claims
// rest on, as SVG files named <stem>-<what>.svg in dir (default: next to
// f). Every point is the median of the runs (one per -count) with its
// confidence interval as error bar, as Summarize computes them. It
// returns the files written.
func Plots(f *File, dir string) ([]string, error) {
	if dir == "" {
		dir = filepath.Dir(f.Path)
	}
	var written []string
	for _, d := range []struct {
		what string
		draw func(*File) (figure, error)
	}{
		{"dispatcher", dispatcherPlots},
		{"trampoline", curvePlots(curve{
			family: "BenchmarkTrampoline", x: "progs",
			title: "fentry/fexit programs on an XDP program", xlabel: "tracing programs attached to the XDP program",
			keep: func(n Name) bool { return n.Keys["target"] == "xdp" },
		})},
		{"freplace", curvePlots(curve{
			family: "BenchmarkTrampoline", x: "chain",
			title: "libxdp-style freplace chains", xlabel: "programs in the chain",
			keep: func(n Name) bool { return n.Keys["target"] == "xdp" },
		})},
		{"tailcall", curvePlots(curve{
			family: "BenchmarkCall", x: "hops",
			title: "tail-call chains", xlabel: "tail calls in the chain (hops)",
			ref: func(Name) bool { return true },
		})},
		{"attach", attachPlots},
	} {
		fig, err := d.draw(f)
		if err != nil {
			return written, fmt.Errorf("%s: %w", d.what, err)
		}
		if len(fig.plots) == 0 {
			continue
		}
		path := filepath.Join(dir, f.Stem()+"-"+d.what+".svg")
		if err := fig.save(path); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// A figure is panels drawn one above the other, aligned on their axes.
type figure struct {
	plots []*plot.Plot
	panel vg.Length // the height of one panel; 0: the default
}

// save writes the figure as SVG.
func (fig figure) save(path string) error {
	plots := fig.plots
	if fig.panel == 0 {
		fig.panel = 3.2 * vg.Inch
	}
	w, h := 7*vg.Inch, vg.Length(len(plots))*fig.panel
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	t := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align(rows, t, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	// Name the fonts metric-compatible with Liberation Sans, which the
	// layout was computed with: a viewer without Liberation uses Arial or
	// Helvetica and the labels still fit. (Embedding the font instead
	// would add half a megabyte to every plot.)
	svg := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;"))
	return os.WriteFile(path, svg, 0o644)
}

// A point is one sub-benchmark's estimate at an x position.
type point struct {
	x float64
	e Estimate
}

type points []point

func (ps points) Len() int                    { return len(ps) }
func (ps points) XY(i int) (float64, float64) { return ps[i].x, ps[i].e.Center }
func (ps points) YError(i int) (float64, float64) {
	e := ps[i].e
	if !e.finite() {
		return 0, 0
	}
	return e.Center - e.Lo, e.Hi - e.Center
}
func (ps points) XError(i int) (float64, float64) { return ps.YError(i) }

// A series is one line of a plot.
type series struct {
	label string
	pts   points
}

// A ref is a horizontal reference line.
type ref struct {
	label string
	y     float64
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// categorical returns ticks at 0..len(labels)-1.
func categorical(labels []string) plot.ConstantTicks {
	var ct plot.ConstantTicks
	for i, l := range labels {
		ct = append(ct, plot.Tick{Value: float64(i), Label: l})
	}
	return ct
}

// titled appends a warning to the title of a plot of an emulated guest's
// file.
func titled(f *File, t string) string {
	if f.Emulated() {
		return t + " [EMULATED GUEST: not a measurement]"
	}
	return t
}

// linePlot draws series with error bars, and dashed reference lines, over
// an x axis marked by ticks.
func linePlot(title, xlabel, ylabel string, ticks plot.ConstantTicks, ss []series, refs []ref) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(4)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker = ticks
	p.Y.Tick.Marker = trimmedTicks{}
	pad := 0.4 * (ticks[len(ticks)-1].Value - ticks[0].Value) / float64(max(len(ticks)-1, 1))
	p.X.Min, p.X.Max = math.Min(0, ticks[0].Value)-pad, ticks[len(ticks)-1].Value+pad
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	for i, r := range refs {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: r.y}, {X: p.X.Max, Y: r.y}})
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 0x60}
		l.Dashes = []vg.Length{vg.Points(4 + 2*float64(i)), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(r.label, l)
	}
	for i, s := range ss {
		col := palette[i%len(palette)]
		l, sc, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = col, col
		sc.Shape = draw.CircleGlyph{}
		eb, err := plotter.NewYErrorBars(s.pts)
		if err != nil {
			return nil, err
		}
		eb.Color = col
		eb.CapWidth = vg.Points(4)
		p.Add(l, sc, eb)
		p.Legend.Add(s.label, l, sc)
	}
	// Start at 0, and leave room above the data for the legend.
	p.Y.Min = math.Min(p.Y.Min, 0)
	p.Y.Max += 0.1*float64(len(ss)+len(refs))*(p.Y.Max-math.Min(p.Y.Min, 0)) + 0.05
	return p, nil
}

// trimmedTicks are plot's default ticks labelled without trailing zeros
// (50, not 50.00).
type trimmedTicks struct{}

func (trimmedTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i, t := range ts {
		if strings.Contains(t.Label, ".") && !strings.ContainsAny(t.Label, "eE") {
			ts[i].Label = strings.TrimRight(strings.TrimRight(t.Label, "0"), ".")
		}
	}
	return ts
}

// estimate summarises one sub-benchmark's unit in f, or reports false.
func estimate(f *File, name, unit string) (Estimate, bool) {
	runs := f.Runs[name]
	var xs, within []float64
	for _, r := range runs {
		if v, ok := r.Values[unit]; ok {
			xs = append(xs, v)
		}
		if w, ok := r.Values[ci95Units[unit]]; ok {
			within = append(within, w)
		}
	}
	if len(xs) == 0 {
		return Estimate{}, false
	}
	if len(within) != len(xs) {
		within = nil
	}
	return Summarize(xs, within), true
}

// names returns f's sub-benchmarks of family satisfying keep.
func names(f *File, family string, keep func(Name) bool) []Name {
	var out []Name
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
func dispatcherPlots(f *File) (figure, error) {
	xdp := names(f, "BenchmarkDispatcher", func(n Name) bool {
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
	var plots []*plot.Plot
	for _, panel := range []struct {
		unit, ylabel, title string
	}{
		{"delta-ns/op", "ns/op over the program alone (k0)", title},
		{"ns/op", "ns/op", "absolute ns/op: the machine's two speed levels mix in"},
	} {
		var ss []series
		for i, fl := range fills {
			s := series{label: "fill=" + fl + " (median, CI)"}
			off := 0.12 * (float64(i) - float64(len(fills)-1)/2)
			for _, n := range xdp {
				fn := n.Keys["fill"]
				if fn != fl && fn != "none" {
					continue
				}
				x := float64(slices.Index(levels, n.Keys["dispatcher"]))
				e, ok := estimate(f, n.String(), panel.unit)
				if !ok && panel.unit == "delta-ns/op" && fn == "none" {
					// The baseline has no delta: it is 0 by definition.
					e, ok = Estimate{0, 0, 0, "baseline"}, true
				}
				if ok {
					s.pts = append(s.pts, point{x + off, e})
				}
			}
			sort.Slice(s.pts, func(i, j int) bool { return s.pts[i].x < s.pts[j].x })
			if len(s.pts) > 0 {
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
		p, err := linePlot(panel.title, xlabel, panel.ylabel, categorical(ticks), ss, refs)
		if err != nil {
			return figure{}, err
		}
		plots = append(plots, p)
	}
	return figure{plots: plots}, nil
}

// A curve is a family's cost against a numeric key.
type curve struct {
	family, x     string
	title, xlabel string
	// keep selects the family's rows that belong on the plot (nil: all
	// with a numeric x). A row at x=0 is the baseline every line starts
	// from.
	keep func(Name) bool
	// ref selects rows without x drawn as horizontal reference lines.
	ref func(Name) bool
}

// curvePlots returns a drawer of a curve: one line per combination of the
// keys other than x that vary, in the paired delta to the family's
// baseline (when the family reports one) and in ns/op.
func curvePlots(c curve) func(*File) (figure, error) {
	return func(f *File) (figure, error) {
		ns := names(f, c.family, func(n Name) bool {
			_, err := strconv.Atoi(n.Keys[c.x])
			return err == nil && (c.keep == nil || c.keep(n))
		})
		if len(ns) == 0 {
			return figure{}, nil
		}
		// A linear axis: a cost per program or per hop is then a straight
		// line, its slope the increment.
		var xs []int
		var zero []Name
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
		lineOf := func(n Name) string {
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
		var refs []Name
		if c.ref != nil {
			refs = names(f, c.family, func(n Name) bool { _, has := n.Keys[c.x]; return !has && c.ref(n) })
		}
		var plots []*plot.Plot
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
					base = &point{0, Estimate{0, 0, 0, "baseline"}}
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
			if len(plots) == 0 {
				t = titled(f, fmt.Sprintf("%s (kernel %s)", c.title, f.Label("kernel")))
			}
			p, err := linePlot(t, c.xlabel, panel.ylabel, ticks, ss, rs)
			if err != nil {
				return figure{}, err
			}
			plots = append(plots, p)
		}
		return figure{plots: plots}, nil
	}
}

// attachPlots draws BenchmarkAttach: every variant's packet rate, and its
// receiver's cost per packet, as horizontal bars with error bars.
func attachPlots(f *File) (figure, error) {
	type bar struct {
		label string
		e     Estimate
	}
	var plots []*plot.Plot
	rows := 0
	for _, panel := range []struct {
		unit, xlabel, title string
		scale               float64
	}{
		{"capacity-pps", "Mpps the generating CPU sustains (generator and receiver share it)",
			fmt.Sprintf("BenchmarkAttach: packets through XDP on veth (kernel %s)", f.Label("kernel")), 1e-6},
		{"rx-ns/pkt", "the receiver's ns per packet (rx-ns/pkt)", "", 1},
	} {
		var bars []bar
		for _, n := range names(f, "BenchmarkAttach", func(Name) bool { return true }) {
			e, ok := estimate(f, n.String(), panel.unit)
			if !ok && panel.unit == "capacity-pps" {
				// Files from before the unit was named for what it is.
				e, ok = estimate(f, n.String(), "pps")
			}
			if ok {
				e.Center, e.Lo, e.Hi = e.Center*panel.scale, e.Lo*panel.scale, e.Hi*panel.scale
				bars = append(bars, bar{n.Short(), e})
			}
		}
		if len(bars) == 0 {
			continue
		}
		rows += len(bars)
		p := plot.New()
		p.Title.Text = titled(f, panel.title)
		p.Title.Padding = vg.Points(6)
		p.X.Label.Text = panel.xlabel
		p.X.Tick.Marker = trimmedTicks{}
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
		bc.Color = palette[len(plots)]
		bc.LineStyle.Width = 0
		eb, err := plotter.NewXErrorBars(pts)
		if err != nil {
			return figure{}, err
		}
		eb.CapWidth = vg.Points(6)
		p.Add(plotter.NewGrid(), bc, eb)
		p.NominalY(labels...)
		p.Y.Tick.Label.Font.Size = vg.Points(8)
		// Start at 0 and end on a round number past the last error bar.
		hi := 0.0
		for _, b := range bars {
			hi = math.Max(hi, b.e.Center)
			if b.e.finite() {
				hi = math.Max(hi, b.e.Hi)
			}
		}
		p.X.Min = 0
		if hi > 0 {
			step := math.Pow(10, math.Floor(math.Log10(hi))) / 2
			p.X.Max = (math.Floor(hi/step) + 1) * step
		}
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return figure{}, nil
	}
	return figure{plots, vg.Length(rows)*vg.Inch/3/vg.Length(len(plots)) + 1.2*vg.Inch}, nil
}

// swappedPoints are points with x and y exchanged, for horizontal bars.
type swappedPoints []point

func (ps swappedPoints) Len() int                        { return len(ps) }
func (ps swappedPoints) XY(i int) (float64, float64)     { return ps[i].e.Center, ps[i].x }
func (ps swappedPoints) XError(i int) (float64, float64) { return points(ps).YError(i) }
