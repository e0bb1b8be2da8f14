package plots

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/report/timeline"
)

// timeFigure is the frame every figure shares: the run's clock on the x
// axis from 0 to the history's end, the fault windows shaded under the
// data, and a log y axis when asked (latencies span microseconds to
// seconds).
func timeFigure(v lockview.View, title, yLabel string, logY bool) *frame {
	f := newFrame(title)
	p := f.p
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = yLabel
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.X.Min, p.X.Max = 0, float64(v.End)/1e9
	p.X.Tick.Marker = clockTicks{}
	p.Add(faultShading(v.Faults))
	return f
}

// clockTicks marks a figure's time axis where the timeline marks its run
// clock, with the same labels (timeline.ClockTicks).
type clockTicks struct{}

// Ticks implements plot.Ticker on seconds.
func (clockTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, tk := range timeline.ClockTicks(int64(math.Round(lo*1e9)), int64(math.Round(hi*1e9))) {
		out = append(out, plot.Tick{Value: float64(tk.At) / 1e9, Label: tk.Label})
	}
	return out
}

// faultBand is the strip (pt) above the data area where the fault
// shades end in their verbs, as the timeline labels its faults above its
// lanes: a label over the data would hide the data's top.
const faultBand = 10

// shading is a plotter that shades the fault windows over the whole
// height of the data area and the fault band above it, and writes each
// fault's verb in the band, so every figure of the report lines up with
// the nemesis the same way.
type shading struct {
	windows []checker.FaultWindow
}

// faultShading shades ws (their To already set: lockview closes a fault
// never undone at the history's end).
func faultShading(ws []checker.FaultWindow) plot.Plotter { return shading{windows: ws} }

// Plot implements plot.Plotter. All windows are one SVG path, and a
// verb is written only where it does not overlap the one before: a long
// run's hundreds of faults would otherwise be hundreds of elements and
// an unreadable smear of labels in each figure (the windows themselves
// are all drawn, and the nemesis table lists every fault).
func (s shading) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	label := p.Legend.TextStyle
	label.Font.Size = faultSize
	var path vg.Path
	type text struct {
		at  vg.Point
		txt string
	}
	var labels []text
	free := c.Min.X // where the next label may start
	for _, w := range s.windows {
		from, to := trX(float64(w.From)/1e9), trX(float64(w.To)/1e9)
		if to-from < vg.Points(1) {
			to = from + vg.Points(1) // an instant fault stays visible
		}
		from, to = max(from, c.Min.X), min(to, c.Max.X)
		if from < to {
			top := c.Max.Y + faultBand
			path.Move(vg.Point{X: from, Y: c.Min.Y})
			path.Line(vg.Point{X: to, Y: c.Min.Y})
			path.Line(vg.Point{X: to, Y: top})
			path.Line(vg.Point{X: from, Y: top})
			path.Close()
		}
		// A fault near the end is labelled leftwards from the data
		// area's edge rather than cut off there.
		at := min(from+vg.Points(1), c.Max.X-label.Width(w.F))
		if at >= free {
			labels = append(labels, text{vg.Point{X: at, Y: c.Max.Y + vg.Points(2.5)}, w.F})
			free = at + label.Width(w.F) + vg.Points(8) // a gap, so labels read as words
		}
	}
	if len(path) > 0 {
		c.SetColor(colourFault)
		c.Fill(path)
	}
	for _, l := range labels { // over the shade, not under it
		c.FillText(label, l.at, l.txt)
	}
}
