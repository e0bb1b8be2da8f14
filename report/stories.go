package report

import (
	"html/template"

	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/story"
)

// storiesSource is the section that tells each violation as a story
// (package story), after the double writes: every story links to its
// mark on the timeline, and names the history events and apply-log lines
// it is told from as text, so a reader can check it in the raw files.
const storiesSource = `<section id="{{.StoriesID}}">
<h2>Violations told as stories</h2>
{{range .StoryCounts}}<p>{{.}}</p>
{{end}}{{range .Stories}}<div class="violation story" id="{{.ID}}">
<h3>{{.Checker}} #{{.Index}}: {{.Title}}</h3>
<p><a href="{{.Mark}}">Marked on the timeline</a>; each step names the record it comes from.</p>
<ol>
{{range .Steps}}<li>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{if .Ref}} <code>({{.Ref}})</code>{{end}}</li>
{{end}}</ol>
</div>
{{else}}<p>No violation to tell.</p>
{{end}}</section>
`

var _ = template.Must(pageTmpl.New("stories").Parse(storiesSource))

// storyView is one story as the page shows it.
type storyView struct {
	ID, Mark, Checker, Title string
	Index                    int
	Steps                    []stepView
}

type stepView struct{ Text, Ref, Href string }

// stories tells the run's violations (package story) for the page.
func stories(in Page) ([]storyView, []string) {
	told := story.Tell(story.Input{History: in.History, ApplyLog: in.ApplyLog, StartWall: in.StartWall, Results: in.Results})
	var counts []string
	for _, c := range told.Counts {
		counts = append(counts, c.Text())
	}
	out := make([]storyView, 0, len(told.Stories))
	for _, s := range told.Stories {
		mark := anchor.Href(anchor.Violation(s.Checker, s.Index))
		sv := storyView{ID: anchor.Story(s.Checker, s.Index), Mark: mark, Checker: s.Checker, Title: s.Title, Index: s.Index}
		for _, st := range s.Steps {
			v := stepView{Text: st.Text, Ref: st.Ref}
			if st.Mark {
				v.Href = mark
			}
			sv.Steps = append(sv.Steps, v)
		}
		out = append(out, sv)
	}
	return out, counts
}
