package browser

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	web "github.com/zkchaos/zkchaos/internal/browser"
	"github.com/zkchaos/zkchaos/report/anchor"
)

// maxLoad bounds a page's load in Chromium (navigation start to the end
// of the load event): a report loads in a fraction of a second, so one
// that takes this long has grown out of hand for its reader.
const maxLoad = 10 * time.Second

// testCtx bounds one test's browser calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// shotDir is results/browser of the repository, where the screenshots
// are kept for a person (and CI's artifact) to look at.
func shotDir(t *testing.T) string {
	t.Helper()
	root, err := web.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "results", "browser")
}

// openChecked opens the page at addr and checks what every page of
// zkchaos must satisfy: it loads within maxLoad with no console error or
// warning, no uncaught exception and no request off the machine, and
// every link resolves. Its full-page screenshot is saved as
// results/browser/<kind>.png. The page is closed when the test ends.
func openChecked(t *testing.T, b *web.Browser, addr, kind string) *web.Page {
	t.Helper()
	ctx := testCtx(t)
	p, err := b.Open(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	t.Logf("%s: loaded in %s (navigation start to the end of the load event)", kind, p.Load)
	if p.Load > maxLoad {
		t.Errorf("%s: loaded in %s, more than %s", kind, p.Load, maxLoad)
	}
	shot := filepath.Join(shotDir(t), kind+".png")
	if err := p.Screenshot(ctx, shot); err != nil {
		t.Error(err)
	} else {
		t.Logf("%s: screenshot %s", kind, shot)
	}
	probs, err := p.Problems(ctx)
	noErr(t, err)
	expectNone(t, kind+": the browser reported", probs)
	broken, err := p.CheckLinks(ctx)
	noErr(t, err)
	expectNone(t, kind+": broken", broken)
	return p
}

// noErr fails the test on err: a browser call that fails is the harness
// failing, not the page.
func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// expectNone fails the test with every problem, one line each.
func expectNone(t *testing.T, what string, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
}

// verdictText is how report.html writes results.json's "valid" (true,
// false or "unknown").
func verdictText(valid any) string {
	switch valid {
	case true:
		return "VALID"
	case false:
		return "INVALID"
	}
	return "UNKNOWN"
}

// checkVerdict: the page's #verdict says the verdict results.json holds.
func checkVerdict(t *testing.T, ctx context.Context, p *web.Page, valid any) []string {
	txt, ok, err := p.Text(ctx, "#verdict")
	noErr(t, err)
	want := verdictText(valid)
	switch {
	case !ok:
		return []string{"no #verdict element"}
	case firstWord(txt) != want:
		return []string{fmt.Sprintf("#verdict says %q, results.json says %v (%s)", txt, valid, want)}
	}
	return nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// figure is one <figure> of the report as the browser drew it.
type figure struct {
	SVG    bool    `json:"svg"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Text   string  `json:"text"`
}

// checkFigures: every figure the report promises (each <figure> of the
// Figures section, anchor.Figures, or of the whole page while the report
// has no such section id) is drawn: an inline SVG with an area, never the
// note of a figure that could not be drawn. A page with no figure at all
// fails too: a report of a run with a history always has some.
func checkFigures(t *testing.T, ctx context.Context, p *web.Page) []string {
	scope := "#" + anchor.Figures
	n, err := p.Count(ctx, scope)
	noErr(t, err)
	if n == 0 {
		scope = "body"
	}
	js := fmt.Sprintf(`Array.from(document.querySelectorAll(%q), f => {
  const s = f.querySelector(':scope > svg'); const r = s ? s.getBoundingClientRect() : {width: 0, height: 0};
  return {svg: !!s, width: r.width, height: r.height, text: f.innerText.trim().slice(0, 120)};
})`, scope+" figure")
	var figs []figure
	_, err = p.Eval(ctx, js, &figs)
	noErr(t, err)
	if len(figs) == 0 {
		return []string{"no figure in " + scope}
	}
	var bad []string
	for i, f := range figs {
		switch {
		case !f.SVG:
			bad = append(bad, fmt.Sprintf("figure %d of %d is not drawn: %q", i+1, len(figs), f.Text))
		case f.Width == 0 || f.Height == 0:
			bad = append(bad, fmt.Sprintf("figure %d of %d is drawn %gx%g", i+1, len(figs), f.Width, f.Height))
		}
	}
	t.Logf("%d figures in %s, %d not drawn", len(figs), scope, len(bad))
	return bad
}

// checkTimeline: the report has its timeline section (anchor.Timeline),
// drawn, and each of the checker's n violations (their indexes in
// results.json) has its mark, anchor.Violation(checker, i), drawn inside
// it.
func checkTimeline(t *testing.T, ctx context.Context, p *web.Page, checker string, n int) []string {
	if bad := drawn(t, ctx, p, anchor.Timeline, "the timeline"); bad != "" {
		return []string{bad}
	}
	var bad []string
	for i := range n {
		id := anchor.Violation(checker, i)
		if why := drawn(t, ctx, p, id, fmt.Sprintf("%s violation %d's mark", checker, i)); why != "" {
			bad = append(bad, why)
		} else if !within(t, ctx, p, id, anchor.Timeline) {
			bad = append(bad, fmt.Sprintf("%s violation %d's mark #%s is outside #%s", checker, i, id, anchor.Timeline))
		}
	}
	return bad
}

// checkStories: the report has its stories section (anchor.Stories) and
// in it the story of each of the checker's n violations,
// anchor.Story(checker, i). A story may be folded away (a closed
// <details>), so only its presence is required.
func checkStories(t *testing.T, ctx context.Context, p *web.Page, checker string, n int) []string {
	ids, err := p.IDs(ctx)
	noErr(t, err)
	if !ids[anchor.Stories] {
		return []string{"no #" + anchor.Stories + " section"}
	}
	var bad []string
	for i := range n {
		id := anchor.Story(checker, i)
		switch {
		case !ids[id]:
			bad = append(bad, fmt.Sprintf("%s violation %d has no story #%s", checker, i, id))
		case !within(t, ctx, p, id, anchor.Stories):
			bad = append(bad, fmt.Sprintf("%s violation %d's story #%s is outside #%s", checker, i, id, anchor.Stories))
		}
	}
	return bad
}

// drawn is why the element with id is not drawn ("" when it is there
// with an area); what names it in the message.
func drawn(t *testing.T, ctx context.Context, p *web.Page, id, what string) string {
	boxes, err := p.Boxes(ctx, fmt.Sprintf("[id=%q]", id))
	noErr(t, err)
	switch {
	case len(boxes) == 0:
		return fmt.Sprintf("%s (#%s) is missing", what, id)
	case boxes[0].Width == 0 && boxes[0].Height == 0:
		return fmt.Sprintf("%s (#%s) is in the page but not drawn", what, id)
	}
	return ""
}

func within(t *testing.T, ctx context.Context, p *web.Page, inner, outer string) bool {
	t.Helper()
	in, err := p.Within(ctx, inner, outer)
	noErr(t, err)
	return in
}
