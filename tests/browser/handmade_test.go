package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	web "github.com/zkchaos/zkchaos/internal/testkit/browser"
)

// page writes a hand-made report page and opens it (no checks: the
// checks under test are what judges it).
func page(t *testing.T, b *web.Browser, body string) *web.Page {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	html := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>` + body + `</body></html>`
	if err := os.WriteFile(path, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := b.OpenFile(testCtx(t), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// expect checks that problems has one line per wanted substring, in
// order.
func expect(t *testing.T, what string, problems []string, want ...string) {
	t.Helper()
	if len(problems) != len(want) {
		t.Errorf("%s: %d problems %q, want %d like %q", what, len(problems), problems, len(want), want)
		return
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("%s: problem %q does not say %q", what, problems[i], w)
		}
	}
}

// TestChecksOnHandMadePages: the report checks pass a page that has
// what they look for, and name each thing missing from one that lacks
// it: each check of the real pages must be able to fail.
func TestChecksOnHandMadePages(t *testing.T) {
	b := web.StartForTest(t)
	ctx := testCtx(t)
	good := page(t, b, `<div id="verdict">INVALID</div>
<section id="figures"><figure><svg width="300" height="100"></svg></figure><figure><svg width="300" height="100"></svg></figure></section>
<section id="timeline"><svg width="600" height="80" aria-label="lock ownership timeline, 1 lanes"><path class="tl-wr" d="M96 70l8 8m0-8l-8 8" stroke="red"/><line id="double-writer-0" x1="10" x2="10" y1="0" y2="80" stroke="red"/><rect id="double-writer-1" x="50" width="4" height="80"/></svg></section>
<section id="stories"><details><summary>0</summary><p id="story-double-writer-0">story</p></details><p id="story-double-writer-1">story</p></section>`)
	expect(t, "verdict", checkVerdict(t, ctx, good, false))
	expect(t, "figures", checkFigures(t, ctx, good))
	expect(t, "timeline", checkTimeline(t, ctx, good, "double-writer", 2))
	expect(t, "stories", checkStories(t, ctx, good, "double-writer", 2))
	expect(t, "rejected", checkRejected(t, ctx, good, 3))
	expect(t, "timelines", checkDrawnCount(t, ctx, good, timelineSel, "timelines", 1))
	expect(t, "texts", checkTexts(t, ctx, good, "#verdict, #stories summary", "INVALID", "0"))
	expect(t, "one timeline more", checkDrawnCount(t, ctx, good, timelineSel, "timelines", 2), "1 timelines (svg[aria-label^=\"lock ownership timeline\"]), want 2")
	expect(t, "texts", checkTexts(t, ctx, good, "#verdict", "VALID"), `#verdict says ["INVALID"], want ["VALID"]`)
	expect(t, "verdict", checkVerdict(t, ctx, good, true), `says "INVALID", results.json says true (VALID)`)
	expect(t, "one violation more", checkTimeline(t, ctx, good, "double-writer", 3), "violation 2's mark (#double-writer-2) is missing")

	bad := page(t, b, `<div id="verdict">UNKNOWN</div>
<section id="figures"><figure><figcaption>Latency: nothing to draw</figcaption></figure><figure><svg width="0" height="0"></svg></figure></section>
<svg width="20" height="20"><rect id="double-writer-0" width="5" height="5"/></svg>
<section id="timeline"><svg width="0" height="0" aria-label="lock ownership timeline, 1 lanes"></svg><svg width="600" height="80"><rect id="double-writer-1" width="0" height="0"/><rect class="tl-wrbin" width="0" height="0"/></svg></section>
<p id="story-double-writer-0">outside</p><section id="stories"></section>`)
	expect(t, "verdict", checkVerdict(t, ctx, bad, "unknown"))
	expect(t, "figures", checkFigures(t, ctx, bad), `figure 1 of 2 is not drawn: "Latency: nothing to draw"`, "figure 2 of 2 is drawn 0x0")
	expect(t, "timeline", checkTimeline(t, ctx, bad, "double-writer", 2),
		"mark #double-writer-0 is outside #timeline", "violation 1's mark (#double-writer-1) is in the page but not drawn")
	expect(t, "stories", checkStories(t, ctx, bad, "double-writer", 2),
		"story #story-double-writer-0 is outside #stories", "violation 1 has no story #story-double-writer-1")
	expect(t, "rejected", checkRejected(t, ctx, bad, 1), "counts 1 rejected writes; the timeline draws none (1 elements")
	expect(t, "no rejection", checkRejected(t, ctx, bad, 0))
	expect(t, "timelines", checkDrawnCount(t, ctx, bad, timelineSel, "timelines", 1), "timelines 1 of 1 is drawn 0x0")

	none := page(t, b, `<p>nothing</p>`)
	expect(t, "verdict", checkVerdict(t, ctx, none, true), "no #verdict element")
	expect(t, "figures", checkFigures(t, ctx, none), "no figure in body")
	expect(t, "timeline", checkTimeline(t, ctx, none, "double-writer", 1), "the timeline (#timeline) is missing")
	expect(t, "stories", checkStories(t, ctx, none, "double-writer", 1), "no #stories section")
	expect(t, "rejected", checkRejected(t, ctx, none, 1), "the timeline draws none (0 elements")
	expect(t, "texts", checkTexts(t, ctx, none, "#verdict", "VALID"), `#verdict says [], want ["VALID"]`)
}
