package browser

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	web "github.com/zkchaos/zkchaos/internal/testkit/browser"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
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
	root, err := chaostest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "results", "browser")
}

// openChecked opens the page at addr and checks what every page of
// zkchaos must satisfy: it loads within maxLoad with no console error or
// warning, no uncaught exception and no request off the machine; every
// link resolves; it has no script (the pages are static, and `chaos
// serve` forbids scripts in its own). what names the page in messages;
// shot, when not empty, keeps its full-page screenshot as
// results/browser/<shot>.png (one per kind of page: a page opened again,
// filtered say, keeps none). The page is closed when the test ends.
func openChecked(t *testing.T, b *web.Browser, addr, what, shot string) *web.Page {
	t.Helper()
	ctx := testCtx(t)
	p, err := b.Open(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	t.Logf("%s: loaded in %s (navigation start to the end of the load event)", what, p.Load)
	if p.Load > maxLoad {
		t.Errorf("%s: loaded in %s, more than %s", what, p.Load, maxLoad)
	}
	if shot != "" {
		path := filepath.Join(shotDir(t), shot+".png")
		if err := p.Screenshot(ctx, path); err != nil {
			t.Error(err)
		} else {
			t.Logf("%s: screenshot %s", what, path)
		}
	}
	probs, err := p.Problems(ctx)
	noErr(t, err)
	expectNone(t, what+": the browser reported", probs)
	broken, err := p.CheckLinks(ctx)
	noErr(t, err)
	expectNone(t, what+": broken", broken)
	if n, err := p.Count(ctx, "script"); err != nil || n > 0 {
		t.Errorf("%s: %d <script> elements (%v); zkchaos's pages have none", what, n, err)
	}
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

// rejectedSel is how the timeline draws a write the register rejected
// (report/timeline/lane.go): a red cross one by one (tl-wr), or its share of a
// bin when a crowded lane is summarised (tl-wrbin).
const rejectedSel = "#" + anchor.Timeline + " .tl-wr, #" + anchor.Timeline + " .tl-wrbin"

// checkRejected: when results.json counts n writes the register
// rejected (fencing at work), the timeline shows at least one, drawn.
func checkRejected(t *testing.T, ctx context.Context, p *web.Page, n int) []string {
	if n == 0 {
		return nil
	}
	boxes, err := p.Boxes(ctx, rejectedSel)
	noErr(t, err)
	for _, b := range boxes {
		if b.Width > 0 && b.Height > 0 {
			t.Logf("%d rejected writes in results.json, %d elements of them in the timeline", n, len(boxes))
			return nil
		}
	}
	return []string{fmt.Sprintf("results.json counts %d rejected writes; the timeline draws none (%d elements %s, none with an area)", n, len(boxes), rejectedSel)}
}

// timelineSel is the lock ownership timeline's figure wherever it is
// drawn (package timeline labels its main figure so).
const timelineSel = `svg[aria-label^="lock ownership timeline"]`

// checkDrawnCount: exactly want elements match sel, each drawn with an
// area; what names them in the message.
func checkDrawnCount(t *testing.T, ctx context.Context, p *web.Page, sel, what string, want int) []string {
	boxes, err := p.Boxes(ctx, sel)
	noErr(t, err)
	if len(boxes) != want {
		return []string{fmt.Sprintf("%d %s (%s), want %d", len(boxes), what, sel, want)}
	}
	var bad []string
	for i, b := range boxes {
		if b.Width == 0 || b.Height == 0 {
			bad = append(bad, fmt.Sprintf("%s %d of %d is drawn %gx%g", what, i+1, want, b.Width, b.Height))
		}
	}
	return bad
}

// checkTexts: the rendered texts of the elements matching sel are want,
// in order.
func checkTexts(t *testing.T, ctx context.Context, p *web.Page, sel string, want ...string) []string {
	var got []string
	_, err := p.Eval(ctx, fmt.Sprintf(`Array.from(document.querySelectorAll(%q), e => e.innerText.trim())`, sel), &got)
	noErr(t, err)
	if !slices.Equal(got, want) {
		return []string{fmt.Sprintf("%s says %q, want %q", sel, got, want)}
	}
	return nil
}
