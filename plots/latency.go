// Package plots draws the report's figures as SVG with gonum.org/v1/plot,
// to be inlined in report.html: the page stays one file that works
// offline, from a CI artifact or a mail, with no script and no CDN.
// Every figure is drawn on the run's clock (seconds since the start, as
// the history) with the nemesis' fault windows shaded and labelled, so a
// change in behaviour lines up with the fault that caused it.
package plots

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// ErrNothingToDraw is returned when the history has nothing a figure
// draws (no completed operation, no session event): a figure without
// points would only look like one.
var ErrNothingToDraw = errors.New("no event of this kind in the history")

// minLatencyMS is where latencies are clamped on the log axis: a
// completion recorded in the same nanosecond as its invocation has no
// logarithm.
const minLatencyMS = 0.001

// Outcome colours, the same on every figure: ok green, fail red, info
// (unknown) amber, as the report's tables colour them.
var (
	colourOK   = color.RGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}
	colourFail = color.RGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	colourInfo = color.RGBA{R: 0xef, G: 0x9a, B: 0x00, A: 0xff}
	// colourFault shades a fault window; light, so points stay readable.
	colourFault = color.NRGBA{R: 0x70, G: 0x70, B: 0xd0, A: 0x30}
)

// Latency draws every worker operation's latency (invocation to
// completion, ms, log scale) at its completion time, one point each,
// coloured by outcome; an operation never completed is not drawn (it has
// no latency), and the figure says how many there were. Fault windows
// are shaded and labelled with their verb.
func Latency(h []history.Event) ([]byte, error) {
	p, err := latencyPlot(h)
	if err != nil {
		return nil, err
	}
	return svgOf(p, 9*vg.Inch, 3.5*vg.Inch)
}

// latencyPlot builds the latency figure.
func latencyPlot(h []history.Event) (*plot.Plot, error) {
	v := lockview.Of(h)
	byType := map[history.Type]plotter.XYs{}
	open := 0
	for _, o := range v.Ops {
		if o.Type == "" {
			open++
			continue
		}
		byType[o.Type] = append(byType[o.Type], plotter.XY{X: float64(o.Done) / 1e9, Y: ms(o.Done - o.Invoke)})
	}
	if len(byType) == 0 {
		return nil, ErrNothingToDraw
	}
	title := "Latency of every operation"
	if open > 0 {
		title += fmt.Sprintf(" (%d never completed, not drawn)", open)
	}
	p := timeFigure(v, title, "latency (ms, log scale)", true)
	for _, s := range []struct {
		t history.Type
		c color.Color
	}{{history.OK, colourOK}, {history.Fail, colourFail}, {history.Info, colourInfo}} {
		pts := byType[s.t]
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("latency %s points: %w", s.t, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: s.c, Radius: vg.Points(1.2), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s (%d)", s.t, len(pts)), sc)
	}
	p.Legend.Top = true
	return p, nil
}

// svgOf renders p as an SVG document without the XML declaration, ready
// to inline in HTML.
func svgOf(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("rendering SVG: %w", err)
	}
	out := b.Bytes()
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
	return out, nil
}
