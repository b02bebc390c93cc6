package plots

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"bpfbench/results/benchfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// TestPlotsReadable renders every figure the report draws from the test
// data and checks, on the SVG itself, that it is well formed and that
// every text lies inside the viewBox and clear of every other text, also
// when a viewer sets it in a font up to fontSlack wider than the one the
// layout measured (the committed dispatcher plot had its legend over the
// first title, its y label cut at the top and its x label off the right
// edge).
func TestPlotsReadable(t *testing.T) {
	n := 0
	for _, name := range []string{"retpoline.txt", "mitigations-off.txt", "icount-7.0.txt"} {
		n += checkFigures(t, name, readTestdata(t, name)[0])
	}
	if n < 5 {
		t.Errorf("rendered %d figures from the test data, want the 5 of retpoline.txt at least", n)
	}
}

// TestCheckSVG: the checker finds what it looks for.
func TestCheckSVG(t *testing.T) {
	mk := func(texts string) []byte {
		return []byte(`<?xml version="1.0"?><svg width="100pt" height="50pt" viewBox="0 0 100 50" xmlns="http://www.w3.org/2000/svg">` +
			`<g transform="scale(1, -1) translate(0, -50)">` + texts + `</g></svg>`)
	}
	txt := func(x, y float64, s string) string {
		return fmt.Sprintf(`<text x="%g" y="%g" transform="scale(1, -1)" style="font-size:10px">%s</text>`, x, -y, s)
	}
	if p := checkSVG(mk(txt(5, 20, "fits"))); len(p) != 0 {
		t.Errorf("a text that fits: %q", p)
	}
	if p := checkSVG(mk(txt(60, 20, "runs off the right edge"))); len(p) != 1 || !strings.Contains(p[0], "outside") {
		t.Errorf("a text off the edge: %q", p)
	}
	if p := checkSVG(mk(txt(5, 20, "one") + txt(8, 22, "two"))); len(p) != 1 || !strings.Contains(p[0], "overlaps") {
		t.Errorf("overlapping texts: %q", p)
	}
	if p := checkSVG(mk(`<g transform="rotate(90)">` + txt(10, 5, "a long rotated label") + `</g>`)); len(p) == 0 {
		t.Error("a rotated text leaving the top was not found")
	}
	if p := checkSVG([]byte(`<svg viewBox="0 0 10 10"><text>`)); len(p) == 0 {
		t.Error("malformed SVG passed")
	}
}

// A box is a text's extent in viewBox coordinates.
type box struct {
	text                   string
	minX, minY, maxX, maxY float64
}

// checkSVG returns the problems of an SVG written by vgsvg: not well
// formed, no viewBox, a text outside it or overlapping another.
func checkSVG(svg []byte) []string {
	var problems []string
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var w, h float64
	stack := []matrix{identity}
	var boxes []box
	var inText *xml.StartElement
	var content strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return append(problems, "not well formed: "+err.Error())
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			m := stack[len(stack)-1].mul(parseTransform(attr(tok, "transform")))
			stack = append(stack, m)
			switch tok.Name.Local {
			case "svg":
				vb := strings.Fields(attr(tok, "viewBox"))
				if len(vb) != 4 {
					return append(problems, "no viewBox")
				}
				w, _ = strconv.ParseFloat(vb[2], 64)
				h, _ = strconv.ParseFloat(vb[3], 64)
			case "text":
				e := tok.Copy()
				inText = &e
				content.Reset()
			}
		case xml.CharData:
			if inText != nil {
				content.Write(tok)
			}
		case xml.EndElement:
			if inText != nil && tok.Name.Local == "text" {
				b, err := textBox(*inText, html.UnescapeString(content.String()), stack[len(stack)-1])
				if err != nil {
					problems = append(problems, err.Error())
				} else if strings.TrimSpace(b.text) != "" {
					boxes = append(boxes, b)
				}
				inText = nil
			}
			stack = stack[:len(stack)-1]
		}
	}
	if w == 0 || h == 0 {
		return append(problems, "no svg element with a viewBox")
	}
	const eps = 0.5
	for i, b := range boxes {
		if b.minX < -eps || b.minY < -eps || b.maxX > w+eps || b.maxY > h+eps {
			problems = append(problems, fmt.Sprintf("text %q lies outside the viewBox 0 0 %g %g: [%.1f, %.1f]x[%.1f, %.1f]", b.text, w, h, b.minX, b.maxX, b.minY, b.maxY))
		}
		for _, o := range boxes[:i] {
			dx := math.Min(b.maxX, o.maxX) - math.Max(b.minX, o.minX)
			dy := math.Min(b.maxY, o.maxY) - math.Max(b.minY, o.minY)
			if dx > eps && dy > eps {
				problems = append(problems, fmt.Sprintf("text %q overlaps text %q", b.text, o.text))
			}
		}
	}
	return problems
}

var fontSize = regexp.MustCompile(`font-size:([0-9.]+)px`)

// textBox is the extent of a <text> element set in Liberation Sans made
// fontSlack wider, from its baseline origin (x, y) along its direction,
// up by the height of capitals and down by the descent of p and q.
func textBox(e xml.StartElement, s string, m matrix) (box, error) {
	x, err1 := strconv.ParseFloat(attr(e, "x"), 64)
	y, err2 := strconv.ParseFloat(attr(e, "y"), 64)
	fs := fontSize.FindStringSubmatch(attr(e, "style"))
	if err1 != nil || err2 != nil || fs == nil {
		return box{}, fmt.Errorf("text %q: no position or font size", s)
	}
	size, _ := strconv.ParseFloat(fs[1], 64)
	sty := text.Style{Font: font.From(plot.DefaultFont, vg.Length(size)), Handler: plot.DefaultTextHandler}
	width := float64(sty.Width(s)) * fontSlack
	b := box{text: s, minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1)}
	for _, c := range [][2]float64{{x, y - 0.72*size}, {x + width, y - 0.72*size}, {x, y + 0.2*size}, {x + width, y + 0.2*size}} {
		px, py := m.apply(c[0], c[1])
		b.minX, b.maxX = math.Min(b.minX, px), math.Max(b.maxX, px)
		b.minY, b.maxY = math.Min(b.minY, py), math.Max(b.maxY, py)
	}
	return b, nil
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// A matrix is an SVG transform [a c e; b d f].
type matrix struct{ a, b, c, d, e, f float64 }

var identity = matrix{a: 1, d: 1}

// mul is m followed, inside, by n: the point is transformed by n first.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return m.a*x + m.c*y + m.e, m.b*x + m.d*y + m.f
}

var transformFunc = regexp.MustCompile(`(\w+)\(([^)]*)\)`)

// parseTransform reads the translate, scale and rotate functions vgsvg
// writes.
func parseTransform(s string) matrix {
	m := identity
	for _, fn := range transformFunc.FindAllStringSubmatch(s, -1) {
		var args []float64
		for _, a := range strings.FieldsFunc(fn[2], func(r rune) bool { return r == ',' || r == ' ' }) {
			v, _ := strconv.ParseFloat(a, 64)
			args = append(args, v)
		}
		for len(args) < 2 {
			args = append(args, math.NaN())
		}
		var n matrix
		switch fn[1] {
		case "translate":
			ty := args[1]
			if math.IsNaN(ty) {
				ty = 0
			}
			n = matrix{a: 1, d: 1, e: args[0], f: ty}
		case "scale":
			sy := args[1]
			if math.IsNaN(sy) {
				sy = args[0]
			}
			n = matrix{a: args[0], d: sy}
		case "rotate":
			sin, cos := math.Sincos(args[0] * math.Pi / 180)
			n = matrix{a: cos, b: sin, c: -sin, d: cos}
		default:
			continue
		}
		m = m.mul(n)
	}
	return m
}

// TestCommittedPlotsReadable holds the plots of every committed results
// file to the same checks.
func TestCommittedPlotsReadable(t *testing.T) {
	for _, f := range committed(t) {
		checkFigures(t, f.Stem(), f)
	}
}

// checkFigures renders every figure of f, reports what checkSVG finds in
// each under name, and returns how many it rendered.
func checkFigures(t *testing.T, name string, f *benchfile.File) int {
	t.Helper()
	figs, err := figures(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, fig := range figs {
		svg, err := fig.render()
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range checkSVG(svg) {
			t.Errorf("%s, %s plot: %s", name, fig.what, problem)
		}
	}
	return len(figs)
}
