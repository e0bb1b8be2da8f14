package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/report/anchor"
)

// Every double-writer violation of results.json has its story on the
// page, in the stories section after the double writes, linking to its
// mark on the timeline; the hostile key stays escaped.
func TestStoriesSection(t *testing.T) {
	p := page(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text, html := parse(t, b), string(b)
	var d fence.DoubleWriterDetails
	if err := p.Results.Checkers[fence.NameDoubleWriter].DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	sec := strings.Index(html, `<section id="`+anchor.Stories+`">`)
	if sec < 0 || sec < strings.Index(html, "<h2>Double writes</h2>") {
		t.Fatalf("no stories section after the double writes")
	}
	for i := range d.Violations {
		id := anchor.Story(fence.NameDoubleWriter, i)
		at := strings.Index(html, `id="`+id+`"`)
		if at < 0 {
			t.Errorf("no element %s", id)
			continue
		}
		end := strings.Index(html[at:], "</div>")
		if !strings.Contains(html[at:at+end], `href="`+anchor.Href(anchor.Violation(fence.NameDoubleWriter, i))+`"`) {
			t.Errorf("story %s does not link to its timeline mark", id)
		}
	}
	if !strings.Contains(text, "every one told below") {
		t.Error("no count of the stories told")
	}
	if strings.Contains(html, "<script>") {
		t.Error("hostile key not escaped in the stories")
	}
}

// TestStoryContinuesAnEarlierOne: a story whose first steps are an
// earlier one's shows only the rest, under a link to it; one that
// shares too little, or another checker's, is shown whole.
func TestStoryContinuesAnEarlierOne(t *testing.T) {
	steps := func(texts ...string) []stepView {
		var out []stepView
		for _, x := range texts {
			out = append(out, stepView{Text: x})
		}
		return out
	}
	first := storyView{ID: "story-double-writer-0", Checker: "double-writer", Index: 0, Steps: steps("a", "b", "c", "d", "lost")}
	second := storyView{Checker: "double-writer", Index: 1, Steps: steps("a", "b", "c", "d", "regressed")}
	shareWithEarlier(&second, []storyView{first})
	if second.SameAs != "#story-double-writer-0" || second.Shared != 4 || second.Start != 5 || len(second.Steps) != 1 || second.Steps[0].Text != "regressed" {
		t.Errorf("continuation %+v", second)
	}
	short := storyView{Checker: "double-writer", Steps: steps("a", "b", "x")}
	other := storyView{Checker: "stale-term", Steps: steps("a", "b", "c", "d", "y")}
	for _, sv := range []*storyView{&short, &other} {
		shareWithEarlier(sv, []storyView{first})
		if sv.SameAs != "" || sv.Shared != 0 {
			t.Errorf("%s story shown as a continuation: %+v", sv.Checker, sv)
		}
	}
}
