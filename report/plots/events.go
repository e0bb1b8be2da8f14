package plots

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// eventRows are the rows of the session-event strip, bottom up: what a
// worker reported of its session, what it lost, and what the resource
// refused: the Disconnected/Expired counts and rejected tokens a lock
// service is watched by (docs/background.md#what-the-metrics-mean).
// A row's axis label is short, to fit beside the strip in the page's
// left margin; the caption says what each row is.
var eventRows = []struct {
	label, axis string
	c           color.RGBA
}{
	{"disconnected", "disconnected", colourInfo},
	{"expired", "expired", colourFail},
	{"lost / demoted", "lost / demoted", color.RGBA{R: 0x6a, G: 0x1b, B: 0x9a, A: 0xff}},
	{"rejected by the resource", "refused", color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 0xff}},
}

// eventRow places a history event on the strip: its row, or -1.
func eventRow(f, state, errText string, typ history.Type) int {
	switch {
	case f == history.FSession && state == "disconnected":
		return 0
	case f == history.FSession && state == "expired":
		return 1
	case f == history.FLost || f == history.FDemoted:
		return 2
	case typ == history.Fail && strings.HasPrefix(errText, "rejected"):
		// The protocol's answer for a call the register refused
		// (docs/worker-protocol.md: "rejected: <reason>").
		return 3
	}
	return -1
}

// Events draws the session events the workers reported and the calls the
// resource refused as marks on the run's clock, one row each, with the
// fault windows shaded: an expiry follows its pause, a rejection follows
// the expiry. Up to MaxPoints marks are drawn one by one; past that the
// busiest rows are drawn as densities of time bins, which the title and
// caption say. A history without any gives ErrNothingToDraw.
func Events(v lockview.View) (Figure, error) { return render(eventsFrame(v)) }

// eventsFrame builds the figure Events draws.
func eventsFrame(v lockview.View) (*frame, error) {
	rows := eventMarks(v)
	sizes := make([]int, len(rows))
	total := 0
	for i, r := range rows {
		sizes[i], total = len(r), total+len(r)
	}
	if total == 0 {
		return nil, ErrNothingToDraw
	}
	one := oneByOne(sizes, MaxPoints)
	w := binWidth(v.End, MaxDensityCols)
	var binned []string
	for i, row := range eventRows {
		if sizes[i] > 0 && !one[i] {
			binned = append(binned, fmt.Sprintf("%s %s", count(sizes[i]), row.label))
		}
	}
	title := "Session events and refused calls"
	if len(binned) > 0 {
		title += fmt.Sprintf(" (%s drawn as %s bins)", strings.Join(binned, ", "), span(w))
	}
	f := timeFigure(v, title, "", false)
	p := f.p
	p.Y.Min, p.Y.Max = 0.5, float64(len(eventRows))+0.5
	ticks := make([]plot.Tick, len(eventRows))
	for i, row := range eventRows {
		ticks[i] = plot.Tick{Value: float64(i + 1), Label: fmt.Sprintf("%s\n(%s)", row.axis, count(len(rows[i])))}
		if len(rows[i]) == 0 {
			continue
		}
		if err := eventLayer(p, rows[i], i, one[i], w, v.End); err != nil {
			return nil, fmt.Errorf("%s marks: %w", row.label, err)
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	caption := fmt.Sprintf("Session events the workers reported (disconnected, expired), locks they lost or leaderships they were demoted from, and calls the resource refused, at their time: %s", plural(total, "mark"))
	if len(binned) > 0 {
		caption += fmt.Sprintf(", more than the %s a figure draws one by one, so %s are drawn as %s bins shaded by the logarithm of their count",
			count(MaxPoints), strings.Join(binned, " and "), span(w))
	}
	f.height, f.caption = 170, caption+"."
	return f, nil
}

// eventMarks are the times (s) of each row's events.
func eventMarks(v lockview.View) []plotter.XYs {
	rows := make([]plotter.XYs, len(eventRows))
	for _, e := range v.Instants {
		state := ""
		if e.Value != nil {
			state = e.Value.State
		}
		if r := eventRow(e.F, state, "", history.OK); r >= 0 {
			rows[r] = append(rows[r], plotter.XY{X: float64(e.Time) / 1e9, Y: float64(r + 1)})
		}
	}
	for _, o := range v.Ops {
		if r := eventRow(o.F, "", o.Error, o.Type); r >= 0 {
			rows[r] = append(rows[r], plotter.XY{X: float64(o.Done) / 1e9, Y: float64(r + 1)})
		}
	}
	return rows
}

// eventLayer draws row r's marks one by one or as a density strip of
// w-wide bins.
func eventLayer(p *plot.Plot, pts plotter.XYs, r int, one bool, w, end int64) error {
	if one {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: eventRows[r].c, Radius: vg.Points(2.5), Shape: draw.PyramidGlyph{}}
		p.Add(sc)
		return nil
	}
	y := float64(r + 1)
	d := newDensity(eventRows[r].c, float64(w)/1e9, float64(end)/1e9, []float64{y - 0.3, y + 0.3}, binsOf(end, w))
	for _, pt := range pts {
		d.add(0, pt.X)
	}
	p.Add(d)
	return nil
}
