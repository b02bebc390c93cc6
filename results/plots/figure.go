// Package plots draws the curves the claims rest on, from one results
// file, as SVG: a sub-benchmark's cost against what a family varies
// (dispatcher occupancy, programs attached, chain length, packets), and
// across files the instruction counts of each kernel.
//
// Every point is the median of the runs with its confidence interval as
// error bar, as package stat estimates it for the verdicts, so a plot and
// a verdict never disagree about a number. The layout is computed with
// Liberation Sans and leaves room for a wider fallback font (fontSlack),
// because a viewer sets the SVG's text in whatever font it has: the tests
// check every text of every plot stays inside the page and clear of the
// others.
package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"bpfbench/results/benchfile"
	"bpfbench/results/stat"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

// The page: every figure is figWidth wide, with pad around it and
// between its panels.
const (
	figWidth     = 7 * vg.Inch
	pad          = vg.Inch / 8
	panelGap     = vg.Inch / 5
	defaultPanel = 3.3 * vg.Inch
	// fontSlack is how much wider than Liberation Sans, which the layout
	// measures with, a viewer's font may set the same text: one without
	// Liberation (or Arimo, Arial, Helvetica) falls back to a sans-serif
	// such as DejaVu Sans, 13-16% wider. The SVG places each text by its
	// start, so a wider font grows it at its end only: a text centred in
	// a width A fits when its width w has 2*fontSlack - 1 to spare
	// (start at (A-w)/2, end at (A-w)/2 + fontSlack*w <= A).
	fontSlack = 1.15
	centred   = 2*fontSlack - 1
)

// A panel is one plot of a figure and its legend. The legend is drawn in
// a strip of its own under the plot's x axis, never over the data.
type panel struct {
	p      *plot.Plot
	legend plot.Legend
	height vg.Length // of the plot without its legend; 0: defaultPanel
}

// A figure is panels drawn one above the other, their data areas aligned.
type figure struct {
	what   string
	panels []panel
}

// legendHeight is the height of the strip a legend needs under its plot.
func legendHeight(l plot.Legend) vg.Length {
	r := l.Rectangle(draw.Canvas{})
	if h := r.Max.Y - r.Min.Y; h > 0 {
		return h + pad
	}
	return 0
}

// wrap breaks s, centred in max, into lines at spaces so that each
// line set in sty fits with room for a wider font (centred; a word longer
// than that keeps its own line).
func wrap(s string, sty text.Style, max vg.Length) string {
	if s == "" || sty.Width(s)*centred <= max {
		return s
	}
	var lines []string
	cur := ""
	for _, w := range strings.Fields(strings.ReplaceAll(s, "\n", " ")) {
		if cur == "" {
			cur = w
			continue
		}
		if sty.Width(cur+" "+w)*centred > max {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur += " " + w
	}
	return strings.Join(append(lines, cur), "\n")
}

// render lays the figure out and returns it as SVG.
func (fig figure) render() ([]byte, error) {
	var h vg.Length
	for i := range fig.panels {
		if fig.panels[i].height == 0 {
			fig.panels[i].height = defaultPanel
		}
		h += fig.panels[i].height + legendHeight(fig.panels[i].legend)
	}
	h += 2*pad + panelGap*vg.Length(len(fig.panels)-1)
	c := vgsvg.New(figWidth, h)
	dc := draw.New(c)

	// Each panel's canvas, top to bottom, and its texts fitted to it.
	canvases := make([]draw.Canvas, len(fig.panels))
	top := h - pad
	for i, pn := range fig.panels {
		canvases[i] = draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: pad, Y: top - pn.height},
			Max: vg.Point{X: figWidth - pad, Y: top},
		}}
		top -= pn.height + legendHeight(pn.legend) + panelGap
		p := pn.p
		p.Title.Text = wrap(p.Title.Text, p.Title.TextStyle, figWidth-2*pad)
		data := p.DataCanvas(canvases[i])
		p.Y.Label.Text = wrap(p.Y.Label.Text, p.Y.Label.TextStyle, 0.9*(data.Max.Y-data.Min.Y))
		data = p.DataCanvas(canvases[i])
		p.X.Label.Text = wrap(p.X.Label.Text, p.X.Label.TextStyle, canvases[i].Max.X-data.Min.X)
	}
	// Align the data areas: as wide as the narrowest allows.
	var left, right vg.Length
	for i, pn := range fig.panels {
		data := pn.p.DataCanvas(canvases[i])
		left = max(left, data.Min.X-canvases[i].Min.X)
		right = max(right, canvases[i].Max.X-data.Max.X)
	}
	for i, pn := range fig.panels {
		data := pn.p.DataCanvas(canvases[i])
		cv := draw.Crop(canvases[i], left-(data.Min.X-canvases[i].Min.X), -(right - (canvases[i].Max.X - data.Max.X)), 0, 0)
		pn.p.Draw(cv)
		if lh := legendHeight(pn.legend); lh > 0 {
			data = pn.p.DataCanvas(cv)
			l := pn.legend
			l.Top, l.Left = true, true
			l.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: data.Min.X, Y: cv.Min.Y - lh},
				Max: vg.Point{X: cv.Max.X, Y: cv.Min.Y - pad/2},
			}})
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	// Name the fonts metric-compatible with Liberation Sans, which the
	// layout was computed with: a viewer without Liberation uses Arial or
	// Helvetica and the labels still fit. (Embedding the font instead
	// would add half a megabyte to every plot.)
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;")), nil
}

// A point is one sub-benchmark's estimate at an x position.
type point struct {
	x float64
	e stat.Estimate
}

type points []point

func (ps points) Len() int                    { return len(ps) }
func (ps points) XY(i int) (float64, float64) { return ps[i].x, ps[i].e.Center }
func (ps points) YError(i int) (float64, float64) {
	e := ps[i].e
	if !e.Finite() {
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

// colors gives each series label of a figure one colour, the same in
// every panel.
type colors map[string]color.Color

func (cs colors) of(label string) color.Color {
	if c, ok := cs[label]; ok {
		return c
	}
	c := palette[len(cs)%len(palette)]
	cs[label] = c
	return c
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
func titled(f *benchfile.File, t string) string {
	switch {
	case f.Icount():
		return t + " [EMULATED GUEST, instruction counts: not times]"
	case f.Emulated():
		return t + " [EMULATED GUEST: not a measurement]"
	}
	return t
}

// linePlot draws series with error bars, and dashed reference lines, over
// an x axis marked by ticks; the legend is the panel's, drawn under it.
func linePlot(title, xlabel, ylabel string, ticks plot.ConstantTicks, ss []series, refs []ref, cs colors) (panel, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker = ticks
	p.Y.Tick.Marker = trimmedTicks{}
	pad := 0.4 * (ticks[len(ticks)-1].Value - ticks[0].Value) / float64(max(len(ticks)-1, 1))
	if pad == 0 {
		pad = 0.5
	}
	p.X.Min, p.X.Max = math.Min(0, ticks[0].Value)-pad, ticks[len(ticks)-1].Value+pad
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Padding = vg.Points(3)
	for i, r := range refs {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: r.y}, {X: p.X.Max, Y: r.y}})
		if err != nil {
			return panel{}, err
		}
		l.Color = color.Gray{Y: 0x60}
		l.Dashes = []vg.Length{vg.Points(4 + 2*float64(i)), vg.Points(3)}
		p.Add(l)
		legend.Add(r.label, l)
	}
	for _, s := range ss {
		col := cs.of(s.label)
		l, sc, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return panel{}, err
		}
		l.Color, sc.Color = col, col
		sc.Shape = draw.CircleGlyph{}
		eb, err := plotter.NewYErrorBars(s.pts)
		if err != nil {
			return panel{}, err
		}
		eb.Color = col
		eb.CapWidth = vg.Points(4)
		p.Add(l, sc, eb)
		legend.Add(s.label, l, sc)
	}
	// Start at 0, with a little room above the highest error bar.
	p.Y.Min = math.Min(p.Y.Min, 0)
	p.Y.Max += 0.05 * (p.Y.Max - p.Y.Min)
	return panel{p: p, legend: legend}, nil
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

// padRight pads a right-aligned label with spaces, so that a wider font,
// which grows the label at its end, stops short of what it labels.
func padRight(l string, sty text.Style) string {
	n := int(math.Ceil(float64(sty.Width(l) * (fontSlack - 1) / sty.Width(" "))))
	return l + strings.Repeat(" ", n)
}

// swappedPoints are points with x and y exchanged, for horizontal bars.
type swappedPoints []point

func (ps swappedPoints) Len() int                        { return len(ps) }
func (ps swappedPoints) XY(i int) (float64, float64)     { return ps[i].e.Center, ps[i].x }
func (ps swappedPoints) XError(i int) (float64, float64) { return points(ps).YError(i) }
