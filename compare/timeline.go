package compare

import (
	"html/template"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/plots"
	"github.com/zkchaos/zkchaos/report"
	"github.com/zkchaos/zkchaos/runview"
)

// Figure is one drawn figure of a run, or why it could not be drawn.
type Figure struct {
	Title string
	// SVG is inline markup from our own renderer (it escapes the history's
	// text and names no URL), so the template trusts it.
	SVG  template.HTML
	Note string
}

// Timeline is the slot where the page shows each run's timeline: the one
// function to change when package timeline (history, apply log and
// verdicts on one SVG) is on main, to return its figure for
// r.Evidence.History.Events, r.Evidence.ApplyLog, r.Results and
// r.Config.StartWall. Until then it shows the figures package plots draws
// today, both on the run's clock with the faults shaded: the latency of
// every operation and the completions per second. The page draws the two
// runs' figures one above the other, so their time axes line up.
func Timeline(r *runview.Run) []Figure {
	h := r.Evidence.History.Events
	return []Figure{
		draw("Latency of every operation", plots.Latency, h),
		draw("Completions per second", plots.Throughput, h),
	}
}

// draw renders one plots figure through the report's drawing, so both
// pages say the same when a figure cannot be drawn.
func draw(title string, f func([]history.Event) ([]byte, error), h []history.Event) Figure {
	fig := Figure{Title: title}
	fig.SVG, fig.Note = report.DrawFigure(f, h)
	return fig
}
