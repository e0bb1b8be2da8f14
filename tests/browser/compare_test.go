package browser

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	web "github.com/zkchaos/zkchaos/internal/testkit/browser"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/report/anchor"
)

// runCompare runs `chaos compare a b` and returns the page it wrote,
// which must be in the results folder both runs share (where `chaos
// serve` lists it).
func runCompare(t *testing.T, a, b string) string {
	t.Helper()
	out, err := exec.Command(chaostest.Binary(t), "compare", a, b).CombinedOutput()
	if err != nil {
		t.Fatalf("chaos compare: %v\n%s", err, out)
	}
	page, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "compare: ")
	if !ok || filepath.Dir(page) != filepath.Dir(filepath.Dir(a)) {
		t.Fatalf("chaos compare said %q; want the page in the results folder of both runs", out)
	}
	return page
}

// compareVerdicts is where the compare page writes each run's verdict,
// A then B.
const compareVerdicts = "#runs span.verdict"

// compareDiffer are the settings the compare page highlights as
// different between the runs.
const compareDiffer = "#config + table tr.differ > th"

// checkCompare opens the compare page of the fenced (A) and unfenced (B)
// runs: both verdicts, fencing, time_limit, gate and stop_at_first the
// settings highlighted (test-all runs the unfenced cell until its first
// violation, gated on the double-writer it expects, bounded by the
// cell's violation limit rather than the fixed time of the fenced cell),
// both lock ownership timelines
// drawn, a link to
// each run's report, and from B's timeline a link to the story of each
// double-writer violation on B's report (the link check opens that
// report for its ids).
func checkCompare(t *testing.T, b *web.Browser, page string, a, bb run) {
	ctx := testCtx(t)
	p := openChecked(t, b, web.FileURL(page), "compare", "compare")
	expectNone(t, "verdicts", checkTexts(t, ctx, p, compareVerdicts, verdictText(a.Res.Valid), verdictText(bb.Res.Valid)))
	expectNone(t, "settings that differ", checkTexts(t, ctx, p, compareDiffer, "fencing", "time_limit", "gate", "stop_at_first"))
	expectNone(t, "timelines", checkDrawnCount(t, ctx, p, timelineSel, "lock ownership timelines", 2))
	links, err := p.Links(ctx)
	noErr(t, err)
	for _, r := range []run{a, bb} {
		if !linksTo(links, web.FileURL(r.report())) {
			t.Errorf("no link to the report %s", r.report())
		}
	}
	expectNone(t, "stories", storyLinks(links, web.FileURL(bb.report()), bb.DW))
}

// storyLinks is what is missing for links to lead to the story of each of
// the n double-writer violations on the report at addr.
func storyLinks(links []web.Link, addr string, n int) []string {
	have := map[string]bool{}
	for _, l := range links {
		have[l.URL] = true
	}
	var bad []string
	for i := range n {
		if u := addr + anchor.Href(anchor.Story(dwName, i)); !have[u] {
			bad = append(bad, "no link to "+u)
		}
	}
	return bad
}
