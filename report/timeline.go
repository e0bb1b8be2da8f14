package report

import (
	"fmt"
	"html/template"

	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/report/timeline"
)

// timelineSource is the lock ownership timeline's section (package
// timeline draws it; this only places it on the page).
const timelineSource = `{{with .Timeline}}<section id="{{.ID}}">
<h2>Lock ownership timeline</h2>
<style>.tl-fig{margin:0.5em 0 1em}.tl-fig svg{max-width:100%;height:auto}.tl-fig figcaption{color:#444;margin-bottom:0.2em}</style>
{{if .Main}}<p>One lane per key{{if .Election}} (the election: one lane for the leadership, the token is the term){{end}}; time is the run clock, as in the figures. Hover any element for its details.</p>
<ul>
<li>Bars: who held the lock, as the holder saw it, from its grant to its release, its loss or the end of the history; successive holders alternate shades; <b>p3 t=123</b> is process 3 holding token 123. A second row is a holder that still believed it held the lock while another did.</li>
<li>Hatched: a fault acted on the holder (paused, isolated). Faded with a dashed edge: the holder had been retired (an operation of it ended unknown) while its worker was still running.</li>
<li>Under each lane, every write where the register applied it: accepted as a dark tick, rejected as a red cross under a dashed red line that shows whose tenure it fell in.</li>
<li>Red marks: the violations the checkers found, each a link to its story. The red line runs down the lane at the moment of the violation, through the tenure it crosses; the tenures involved are outlined, the writes involved are red dots.</li>
<li>Shaded columns: the nemesis' faults.</li>
</ul>{{end}}
{{range .Notes}}<p><em>{{.}}</em></p>
{{end}}{{if .Main}}<figure class="tl-fig">{{.Main}}</figure>
{{end}}{{if .Unplaced}}<p>Violations that cannot be placed on the run's clock:</p>
<ul>{{range .Unplaced}}<li id="{{.ID}}"><a href="{{.Href}}">{{.Name}}</a>: {{.Text}}</li>
{{end}}</ul>
{{end}}{{if .Zooms}}<h3>Up close: each violation and each rejected write</h3>
{{range .Zooms}}<figure class="tl-fig"><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure>
{{end}}{{end}}</section>
{{end}}`

var _ = template.Must(pageTmpl.New("timeline").Parse(timelineSource))

// timelineView is the section's content.
type timelineView struct {
	ID       string
	Election bool
	Main     template.HTML
	Zooms    []zoomView
	Notes    []string
	Unplaced []unplacedView
}

type zoomView struct {
	Caption string
	SVG     template.HTML
}

// unplacedView is a violation listed in words, under its timeline id.
type unplacedView struct {
	ID, Href, Name, Text string
}

// timelineOf builds the section from the page's history, apply log and
// results; nil without a history (as the figures).
func timelineOf(in Page) *timelineView {
	if len(in.History) == 0 {
		return nil
	}
	m := timeline.Of(timeline.Input{History: in.History, ApplyLog: in.ApplyLog, StartWall: in.StartWall, Results: in.Results})
	d := timeline.Render(m, timeline.Options{})
	// The SVG is package timeline's own markup: every text from the run
	// in it is escaped there (its tests feed it markup), and its only
	// links are in-page anchors.
	v := &timelineView{ID: anchor.Timeline, Election: m.Workload == timeline.WorkloadElection,
		Main: template.HTML(d.Main), Notes: d.Notes}
	for _, z := range d.Zooms {
		v.Zooms = append(v.Zooms, zoomView{Caption: z.Caption, SVG: template.HTML(z.SVG)})
	}
	for _, mk := range d.Unplaced {
		v.Unplaced = append(v.Unplaced, unplacedView{ID: anchor.Violation(mk.Checker, mk.Index),
			Href: anchor.Href(anchor.Story(mk.Checker, mk.Index)), Name: fmt.Sprintf("%s #%d", mk.Checker, mk.Index), Text: mk.Text})
	}
	return v
}
