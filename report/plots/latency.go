// Package plots draws the report's figures as SVG with gonum.org/v1/plot,
// to be inlined in report.html: the page stays one file that works
// offline, from a CI artifact or a mail, with no script and no CDN.
// Every figure is drawn on the run's clock (seconds since the start, as
// the history) with the nemesis' fault windows shaded and labelled, so a
// change in behaviour lines up with the fault that caused it.
package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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

// outcomes are the completion types, in legend order, with their colour.
var outcomes = []struct {
	t history.Type
	c color.RGBA
}{{history.OK, colourOK}, {history.Fail, colourFail}, {history.Info, colourInfo}}

// latencyRowsPerDecade is the density's resolution on the latency axis:
// each row is a factor of 10^(1/5) ≈ 1.6.
const latencyRowsPerDecade = 5

// Latency draws every worker operation's latency (invocation to
// completion, ms, log scale) at its completion time, coloured by
// outcome, with the fault windows shaded and labelled with their verb;
// an operation never completed is not drawn (it has no latency), and the
// caption says how many there were. Up to MaxPoints completions are one
// point each; past that the largest outcomes are drawn as a density of
// time × latency cells (a 100 000-operation run would otherwise be
// 10 MB of SVG), the rare ones still point by point, and the title and
// caption say which.
func Latency(v lockview.View) (Figure, error) { return render(latencyFrame(v)) }

// latencyFrame builds the figure Latency draws.
func latencyFrame(v lockview.View) (*frame, error) {
	series, open := latencySeries(v)
	sizes := make([]int, len(outcomes))
	total := 0
	for i, o := range outcomes {
		sizes[i] = len(series[o.t])
		total += sizes[i]
	}
	if total == 0 {
		return nil, ErrNothingToDraw
	}
	one := oneByOne(sizes, MaxPoints)
	w := binWidth(v.End, MaxDensityCols)
	var points, binned []string
	for i, o := range outcomes {
		switch {
		case sizes[i] == 0:
		case one[i]:
			points = append(points, fmt.Sprintf("%s %s", count(sizes[i]), o.t))
		default:
			binned = append(binned, fmt.Sprintf("%s %s", count(sizes[i]), o.t))
		}
	}
	title := "Latency of every operation"
	if len(binned) > 0 {
		title += fmt.Sprintf(" (%s drawn as %s bins)", strings.Join(binned, ", "), span(w))
	}
	f := timeFigure(v, title, "latency (ms, log scale)", true)
	for i, o := range outcomes {
		pts := series[o.t]
		if len(pts) == 0 {
			continue
		}
		th, note, err := latencyLayer(f.p, pts, o.c, one[i], w, v.End)
		if err != nil {
			return nil, fmt.Errorf("latency %s: %w", o.t, err)
		}
		f.add(fmt.Sprintf("%s (%s%s)", o.t, count(len(pts)), note), th)
	}
	f.height, f.caption = 260, latencyCaption(total, open, points, binned, w)
	return f, nil
}

// latencySeries are the completed operations' (completion s, latency ms)
// by outcome, and how many never completed.
func latencySeries(v lockview.View) (map[history.Type]plotter.XYs, int) {
	byType := map[history.Type]plotter.XYs{}
	open := 0
	for _, o := range v.Ops {
		if o.Type == "" {
			open++
			continue
		}
		byType[o.Type] = append(byType[o.Type], plotter.XY{X: float64(o.Done) / 1e9, Y: ms(o.Done - o.Invoke)})
	}
	return byType, open
}

// latencyLayer adds one outcome's completions to p, as points or as a
// density of w-wide time bins, and returns its legend thumbnail and the
// legend's note.
func latencyLayer(p *plot.Plot, pts plotter.XYs, c color.RGBA, points bool, w, end int64) (plot.Thumbnailer, string, error) {
	if points {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, "", err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(1.2), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		return sc, "", nil
	}
	row := func(ms float64) int { return int(math.Floor(math.Log10(ms) * latencyRowsPerDecade)) }
	lo, hi := row(pts[0].Y), row(pts[0].Y)
	for _, pt := range pts {
		lo, hi = min(lo, row(pt.Y)), max(hi, row(pt.Y))
	}
	edges := make([]float64, 0, hi-lo+2)
	for r := lo; r <= hi+1; r++ {
		edges = append(edges, math.Pow(10, float64(r)/latencyRowsPerDecade))
	}
	d := newDensity(c, float64(w)/1e9, float64(end)/1e9, edges, binsOf(end, w))
	for _, pt := range pts {
		d.add(row(pt.Y)-lo, pt.X)
	}
	p.Add(d)
	return d, ", density", nil
}

// latencyCaption says what the latency figure shows and how: which
// outcomes are points and which are binned.
func latencyCaption(total, open int, points, binned []string, w int64) string {
	s := fmt.Sprintf("Latency of every completed worker operation, from invocation to completion, at its completion (log scale): %s", plural(total, "completion"))
	if len(binned) == 0 {
		s += ", one point each"
	} else {
		s += fmt.Sprintf(", more than the %s a figure draws one by one, so %s are drawn as bins of %s × 1/%d decade of latency, shaded by the logarithm of their count",
			count(MaxPoints), strings.Join(binned, " and "), span(w), latencyRowsPerDecade)
		if len(points) > 0 {
			s += "; " + strings.Join(points, " and ") + " one point each"
		}
	}
	s += "."
	if open > 0 {
		s += fmt.Sprintf(" %s never completed (no latency, not drawn).", plural(open, "operation"))
	}
	return s
}
