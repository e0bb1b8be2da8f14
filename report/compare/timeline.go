package compare

import (
	"html/template"
	"strings"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/report"
	"github.com/zkchaos/zkchaos/report/plots"
	"github.com/zkchaos/zkchaos/report/timeline"
)

// Figure is one drawn figure of a run, or why it could not be drawn.
type Figure struct {
	Title string
	// SVG is inline markup from our own renderers (they escape the
	// history's text and name no URL but the run's own report), so the
	// template trusts it.
	SVG  template.HTML
	Note string
}

// Timeline is what the page draws of one run, A above B so the time
// axes line up: the lock ownership timeline (package timeline, its ids
// prefixed by label so both runs fit on one page, its marks linking the
// stories on the run's own report), then the latency of every operation
// and the completions per second, all on the run's clock with the faults
// shaded.
func Timeline(s Side, label string) []Figure {
	v := lockview.Of(s.Run.Evidence.History.Events)
	return []Figure{
		ownership(s, label),
		draw("Latency of every operation", plots.Latency, v),
		draw("Completions per second", plots.Throughput, v),
	}
}

// ownership draws the run's lock ownership timeline, the whole run only:
// the zoom strips stay on the run's report, one link away.
func ownership(s Side, label string) Figure {
	r := s.Run
	m := timeline.Of(timeline.Input{History: r.Evidence.History.Events, ApplyLog: r.Evidence.ApplyLog,
		StartWall: r.Config.StartWall, Results: r.Results})
	d := timeline.Render(m, timeline.Options{Prefix: strings.ToLower(label) + "-", StoryPage: s.ReportHref()})
	fig := Figure{Title: "Lock ownership timeline", Note: strings.Join(d.Notes, " ")}
	if d.Main != nil {
		fig.SVG = template.HTML(d.Main)
	}
	return fig
}

// draw renders one plots figure through the report's drawing, so both
// pages say the same when a figure cannot be drawn.
func draw(title string, f func(lockview.View) (plots.Figure, error), v lockview.View) Figure {
	fig := Figure{Title: title}
	var caption string
	fig.SVG, caption, fig.Note = report.DrawFigure(f, v)
	if caption != "" {
		fig.Note = strings.TrimSpace(caption + " " + fig.Note)
	}
	return fig
}
