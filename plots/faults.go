package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
)

// timeFigure is the frame every figure shares: the run's clock on the x
// axis from 0 to the history's end, the fault windows shaded under the
// data, and a log y axis when asked (latencies span microseconds to
// seconds).
func timeFigure(v lockview.View, title, yLabel string, logY bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = yLabel
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.X.Min, p.X.Max = 0, float64(v.End)/1e9
	p.Add(faultShading(v.Faults))
	return p
}

// shading is a plotter that shades the fault windows over the whole
// height of the data area and writes each fault's verb at its top, so
// every figure of the report lines up with the nemesis the same way.
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
	label.Font.Size = vg.Points(7)
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
		pts := c.ClipPolygonXY([]vg.Point{{X: from, Y: c.Min.Y}, {X: to, Y: c.Min.Y}, {X: to, Y: c.Max.Y}, {X: from, Y: c.Max.Y}})
		if len(pts) > 0 {
			path.Move(pts[0])
			for _, pt := range pts[1:] {
				path.Line(pt)
			}
			path.Close()
		}
		if at := from + vg.Points(1); at >= free {
			labels = append(labels, text{vg.Point{X: at, Y: c.Max.Y - vg.Points(8)}, w.F})
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
