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
// refused (seed 22's Disconnected/Expired counts and rejected tokens).
var eventRows = []struct {
	label string
	c     color.Color
}{
	{"disconnected", colourInfo},
	{"expired", colourFail},
	{"lost / demoted", color.RGBA{R: 0x6a, G: 0x1b, B: 0x9a, A: 0xff}},
	{"rejected by the resource", color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 0xff}},
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
// the expiry. A history without any gives ErrNothingToDraw.
func Events(h []history.Event) ([]byte, error) {
	v := lockview.Of(h)
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
	p := timeFigure(v, "Session events and refused calls", "", false)
	p.Y.Min, p.Y.Max = 0.5, float64(len(eventRows))+0.5
	ticks := make([]plot.Tick, len(eventRows))
	drawn := 0
	for i, row := range eventRows {
		ticks[i] = plot.Tick{Value: float64(i + 1), Label: fmt.Sprintf("%s (%d)", row.label, len(rows[i]))}
		if len(rows[i]) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(rows[i])
		if err != nil {
			return nil, fmt.Errorf("%s marks: %w", row.label, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: row.c, Radius: vg.Points(2.5), Shape: draw.PyramidGlyph{}}
		p.Add(sc)
		drawn += len(rows[i])
	}
	if drawn == 0 {
		return nil, ErrNothingToDraw
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	return svgOf(p, 9*vg.Inch, 2.2*vg.Inch)
}
