package report

import (
	"html/template"
	"strconv"

	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/report/story"
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
{{if .SameAs}}<p>Steps 1&ndash;{{.Shared}} are those of <a href="{{.SameAs}}">{{.SameAsName}}</a>; then:</p>
{{end}}<ol{{if .Shared}} start="{{.Start}}"{{end}}>
{{range .Steps}}<li>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}{{if .Ref}} <code>({{.Ref}})</code>{{end}}</li>
{{end}}</ol>
</div>
{{else}}<p>No violation to tell.</p>
{{end}}</section>
`

var _ = template.Must(pageTmpl.New("stories").Parse(storiesSource))

// storyView is one story as the page shows it. A story that begins with
// the steps of one told before it (a write that is both a lost update and
// a token regression, a stale holder's second write) shows only the
// steps after those, under a link to the first: nothing is left out, and
// the reader does not read the same ten steps twice.
type storyView struct {
	ID, Mark, Checker, Title string
	Index                    int
	Steps                    []stepView
	// SameAs links the earlier story whose first Shared steps this one
	// shares (SameAsName names it); Start is the number of its first
	// step shown.
	SameAs, SameAsName string
	Shared, Start      int
}

// minShared is how many leading steps two stories must share before the
// second is shown as a continuation of the first: fewer are quicker to
// read again than to look up.
const minShared = 3

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
		shareWithEarlier(&sv, out)
		out = append(out, sv)
	}
	return out, counts
}

// shareWithEarlier shows sv as a continuation of the earlier story of its
// checker with which it shares the most leading steps (at least
// minShared, and not all of its steps).
func shareWithEarlier(sv *storyView, earlier []storyView) {
	best, n := -1, 0
	for j, e := range earlier {
		if e.Checker != sv.Checker || e.Shared > 0 {
			continue
		}
		k := 0
		for k < len(e.Steps) && k < len(sv.Steps)-1 && e.Steps[k] == sv.Steps[k] {
			k++
		}
		if k > n {
			best, n = j, k
		}
	}
	if best < 0 || n < minShared {
		return
	}
	e := earlier[best]
	sv.SameAs, sv.SameAsName = anchor.Href(e.ID), e.Checker+" #"+strconv.Itoa(e.Index)
	sv.Shared, sv.Start, sv.Steps = n, n+1, sv.Steps[n:]
}
