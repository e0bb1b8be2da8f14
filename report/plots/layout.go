package plots

import (
	"bytes"
	"errors"
	"fmt"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/zkchaos/zkchaos/report/timeline"
)

// pxToPt converts CSS pixels to the points gonum's SVG is sized in
// (96 px = 72 pt).
const pxToPt = 0.75

// The page frame every figure is drawn in: as wide as the ownership
// timeline (package timeline) with its data area where the timeline's
// lanes are, so on the report the run clock of each figure lines up with
// the timeline's. The right margin also holds the last tick label's
// right half, which gonum would otherwise clip at the plot's edge.
var (
	pageWidth = vg.Length(timeline.DefaultWidth) * pxToPt
	dataLeft  = vg.Length(timeline.LeftMargin) * pxToPt
	dataRight = pageWidth - vg.Length(timeline.RightMargin)*pxToPt
)

// Text sizes (pt): the figure's text reads at about the timeline's size.
const (
	titleSize = 11
	textSize  = 9
	faultSize = 7
)

// labelSlack is how much wider than gonum measures it a y tick label may
// render before it reaches the tick marks: the label is set right of its
// measured width's end by this share. A browser without the font's
// metric twins (Liberation Sans, Arial, Helvetica) falls back to a wider
// sans-serif, about a tenth wider; without the slack the label's end
// runs into the ticks.
const labelSlack = 0.15

// frame is a figure being drawn: gonum's plot for the axes and the data,
// and the title and legend, which this package draws itself in a header
// above the data area (gonum draws its legend inside the data area, over
// the data and the fault labels).
type frame struct {
	p      *plot.Plot
	title  string
	legend []legendEntry
	// height (pt) of the figure, as wide as the page; caption goes
	// under it.
	height  vg.Length
	caption string
}

// render draws a built figure.
func render(f *frame, err error) (Figure, error) {
	if err != nil {
		return Figure{}, err
	}
	svg, err := f.svg()
	if err != nil {
		return Figure{}, err
	}
	return Figure{SVG: svg, Caption: f.caption}, nil
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// add puts an entry in the legend.
func (f *frame) add(name string, thumb plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumb})
}

// newFrame is a plot in the page's fonts, sans-serif as the page.
func newFrame(title string) *frame {
	p := plot.New()
	sans := func(s *text.Style, size vg.Length) {
		s.Font = font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	}
	sans(&p.X.Label.TextStyle, textSize)
	sans(&p.Y.Label.TextStyle, textSize)
	sans(&p.X.Tick.Label, textSize)
	sans(&p.Y.Tick.Label, textSize)
	sans(&p.Legend.TextStyle, textSize)
	p.Y.Tick.Label.XAlign = draw.XRight - labelSlack
	return &frame{p: p, title: title}
}

// Header geometry (pt).
const (
	headerPad  = 4
	thumbWidth = 14
	thumbGap   = 4
	entryGap   = 14
	titleGap   = 24
)

// layout is where a figure's parts go on a canvas, in its coordinates.
type layout struct {
	titleAt vg.Point     // the title's top left
	legend  vg.Rectangle // the legend's box; empty without one
	plot    draw.Canvas  // what the plot draws in, its axes included
	data    vg.Rectangle // the data area within it
}

// lay places the title at the data area's left, the legend on the same
// line at its right when both fit, else on a line of its own under it,
// and the plot under both, shifted so its data area spans dataLeft to
// dataRight.
func (f *frame) lay(c draw.Canvas) layout {
	ts, ls := f.titleStyle(), f.p.Legend.TextStyle
	rowH := ts.Height("Mg") + headerPad
	top := c.Max.Y - headerPad
	l := layout{titleAt: vg.Point{X: dataLeft, Y: top}}
	header := headerPad + rowH
	if w := f.legendWidth(); w > 0 {
		h := ls.Height("Mg")
		if dataLeft+ts.Width(f.title)+titleGap+w <= dataRight {
			l.legend = vg.Rectangle{Min: vg.Point{X: dataRight - w, Y: top - rowH}, Max: vg.Point{X: dataRight, Y: top - rowH + h}}
		} else {
			l.legend = vg.Rectangle{Min: vg.Point{X: dataLeft, Y: top - rowH - h - 2}, Max: vg.Point{X: dataLeft + w, Y: top - rowH - 2}}
			header += h + 4
		}
	}
	pc := c
	pc.Max.Y -= header + faultBand
	// The data area's left edge depends on the y axis' labels and on
	// the glyphs at the data's edges (gonum pads for them): move the
	// plot's canvas until it lands, a few rounds as the padding
	// depends on the width.
	for range 3 {
		d := f.p.DataCanvas(pc)
		pc.Min.X += dataLeft - d.Min.X
		pc.Max.X += dataRight - d.Max.X
	}
	pc.Min.X, pc.Max.X = max(pc.Min.X, c.Min.X), min(pc.Max.X, c.Max.X)
	l.plot, l.data = pc, f.p.DataCanvas(pc).Rectangle
	return l
}

// titleStyle is the title's text style, set from the top left.
func (f *frame) titleStyle() text.Style {
	s := f.p.Legend.TextStyle
	s.Font.Size = titleSize
	s.Font.Weight = xfont.WeightBold
	s.XAlign, s.YAlign = draw.XLeft, draw.YTop
	return s
}

// legendWidth is the width of the legend on one line: each entry's
// thumbnail and name, a gap between entries.
func (f *frame) legendWidth() vg.Length {
	var w vg.Length
	for i, e := range f.legend {
		if i > 0 {
			w += entryGap
		}
		w += thumbWidth + thumbGap + f.nameWidth(e.name)
	}
	return w
}

// nameWidth is the room a legend name takes: its measured width and
// labelSlack more, so a wider fallback font does not reach the next
// entry or past the data area's right edge.
func (f *frame) nameWidth(name string) vg.Length {
	return f.p.Legend.TextStyle.Width(name) * (1 + labelSlack)
}

// drawHeader writes the title and the legend where l placed them.
func (f *frame) drawHeader(c draw.Canvas, l layout) {
	c.FillText(f.titleStyle(), l.titleAt, f.title)
	s := f.p.Legend.TextStyle
	s.XAlign, s.YAlign = draw.XLeft, draw.YCenter
	x, mid := l.legend.Min.X, (l.legend.Min.Y+l.legend.Max.Y)/2
	for _, e := range f.legend {
		icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: mid - 4}, Max: vg.Point{X: x + thumbWidth, Y: mid + 4}}}
		e.thumb.Thumbnail(&icon)
		x += thumbWidth + thumbGap
		c.FillText(s, vg.Point{X: x, Y: mid}, e.name)
		x += f.nameWidth(e.name) + entryGap
	}
}

// svg renders the figure at the page's width and its height as an SVG
// document without the XML declaration, ready to inline in HTML.
func (f *frame) svg() ([]byte, error) {
	c := vgsvg.New(pageWidth, f.height)
	dc := draw.New(c)
	l := f.lay(dc)
	f.p.Title.Text = ""
	f.p.Draw(l.plot)
	f.drawHeader(dc, l)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("rendering SVG: %w", err)
	}
	return inline(b.Bytes())
}

// svgFamily is the font family gonum names, and fallbackFamily what the
// page asks for instead: the font's metric twins first, so that text
// takes the width gonum measured on most machines, then any sans-serif
// rather than the browser's default serif.
const (
	svgFamily      = "font-family:Liberation Sans;"
	fallbackFamily = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"
)

// inline readies gonum's SVG for a page: no XML declaration, no
// namespace URIs, font fallbacks.
func inline(out []byte) ([]byte, error) {
	if i := bytes.Index(out, []byte("<svg")); i > 0 {
		out = out[i:]
	}
	// HTML puts an inline <svg> in the SVG namespace by itself, and
	// nothing drawn uses xlink: the namespace URIs would only look like
	// network references in a page that has none.
	for _, ns := range [][]byte{[]byte(` xmlns="http://www.w3.org/2000/svg"`), []byte(` xmlns:xlink="http://www.w3.org/1999/xlink"`)} {
		out = bytes.Replace(out, bytes.Replace(ns, []byte(" "), []byte("\n\t"), 1), nil, 1)
		out = bytes.Replace(out, ns, nil, 1)
	}
	if bytes.Contains(out, []byte("http")) {
		return nil, errors.New("rendering SVG: the figure names a URL; an inline figure must not")
	}
	return bytes.ReplaceAll(out, []byte(svgFamily), []byte(fallbackFamily)), nil
}
