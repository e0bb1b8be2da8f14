package browser

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	web "github.com/zkchaos/zkchaos/internal/testkit/browser"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// cells are the matrix cells the package runs, both in one `chaos
// test-all`: the seed recipe through the exec: subject under
// pause-holder, fenced (valid, its stale writes rejected) and unfenced
// (invalid, double writes to show). One invocation gives every page: the
// index, two reports, and the pair `chaos compare` and `chaos serve`
// show. Exact names, because --cells also matches substrings and
// seed/pause-holder/fencing-X selects its docker twin and the
// short-session variant too; the exec: subject has neither.
var cells = [2]string{"exec-chaos-worker/pause-holder/fencing-on", "exec-chaos-worker/pause-holder/fencing-off"}

// timeLimit shortens both cells (30 s in the matrix): test-all runs its
// cells one after another, so the package pays for both, and 20 s still
// holds a few pauses of the holder (each 6 s, one every 2 s between).
const timeLimit = "20s"

// testAll is what the one `chaos test-all` left: its results folder, the
// index, and the folders of its two runs, fenced then unfenced.
type testAll struct {
	Results string
	Index   string
	Runs    [2]string
}

// runTestAll runs both cells with `chaos test-all` into results; a cell
// that did not come out as expected (exit not 0) fails the test, as the
// pages would then not show what the checks look for.
func runTestAll(t *testing.T, results string) testAll {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, chaostest.Binary(t), "test-all", "--results", results,
		"--cells", strings.Join(cells[:], ","), "--time-limit", timeLimit)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("chaos test-all, %d cells of %s: exit %d in %s", len(cells), timeLimit, chaostest.ExitOf(err), time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("chaos test-all: %v\n%s", err, chaostest.Tail(out.String(), 4000))
	}
	indexes, _ := filepath.Glob(filepath.Join(results, "test-all", "*", "index.html"))
	if len(indexes) != 1 {
		t.Fatalf("want one test-all index under %s, found %q\n%s", results, indexes, out.String())
	}
	type attempt struct {
		Dir       string  `json:"dir"`
		ElapsedNS float64 `json:"elapsed_ns"`
	}
	type cellResult struct {
		Name     string    `json:"name"`
		Attempts []attempt `json:"attempts"`
	}
	got := chaostest.ReadJSON[[]cellResult](t, filepath.Dir(indexes[0]), "test-all.json")
	ta := testAll{Results: results, Index: indexes[0]}
	if len(got) != len(cells) {
		t.Fatalf("test-all.json: %d cells, want %d: %+v", len(got), len(cells), got)
	}
	for i, c := range got {
		if c.Name != cells[i] || len(c.Attempts) != 1 {
			t.Fatalf("test-all.json: cell %d is %s with %d attempts, want %s with one", i, c.Name, len(c.Attempts), cells[i])
		}
		ta.Runs[i] = c.Attempts[0].Dir
		t.Logf("%s: %s", c.Name, time.Duration(c.Attempts[0].ElapsedNS).Round(100*time.Millisecond))
	}
	return ta
}

// run is one run of the test-all as the checks need it.
type run struct {
	Dir string
	Res chaostest.Results
	// DW is the double-writer's violations (results.json's details, in
	// order: violation i is marked anchor.Violation("double-writer", i)).
	DW int
	// Rejected is how many writes the register rejected (every key's
	// rejected_writes).
	Rejected int
}

func (r run) report() string { return filepath.Join(r.Dir, "report.html") }

// readRun reads what the checks compare the pages with from results.json.
func readRun(t *testing.T, dir string) run {
	t.Helper()
	type keySummary struct {
		RejectedWrites int `json:"rejected_writes"`
	}
	type dwDetails struct {
		Checkers map[string]struct {
			Keys map[string]keySummary `json:"keys"`
		} `json:"checkers"`
	}
	r := run{Dir: dir, Res: chaostest.ReadResults(t, dir)}
	r.DW = len(r.Res.Checkers[dwName].Violations)
	for _, k := range chaostest.ReadJSON[dwDetails](t, dir, "results.json").Checkers[dwName].Keys {
		r.Rejected += k.RejectedWrites
	}
	t.Logf("run %s: valid %v, %d double-writer violations, %d rejected writes", dir, r.Res.Valid, r.DW, r.Rejected)
	return r
}

// dwName is the double-writer checker's name in results.json.
const dwName = "double-writer"

// TestRealRuns opens every kind of page over one real `chaos test-all` of
// two cells, each kind in a subtest: the two reports, the test-all index,
// the `chaos compare` page of the pair, and `chaos serve` on the results
// folder.
//
// It is slow because the pages must show real runs: a fenced one with
// rejected writes and an unfenced one with double writes. The test-all
// runs them one after another, each with its own ensemble, the fenced
// cell for timeLimit (20 s) and the unfenced one until its first double
// write (up to matrix.DefaultLimit); the pages then load in Chromium in
// seconds.
func TestRealRuns(t *testing.T) {
	b := web.StartForTest(t) // before the runs: no browser, no runs
	// The runs in a subtest of their own: its run token goes back when
	// they end, not after the pages, which need none.
	// The results stay in the parent's folder: a subtest's goes with it.
	var ta testAll
	results := filepath.Join(t.TempDir(), "results")
	if !t.Run("runs", func(t *testing.T) {
		chaostest.NeedEnsemble(t)
		ta = runTestAll(t, results)
	}) {
		t.FailNow()
	}
	var runs [2]run
	for i, dir := range ta.Runs {
		chaostest.AssertNothingLeft(t, dir)
		runs[i] = readRun(t, dir)
	}
	fenced, unfenced := runs[0], runs[1]
	if fenced.Res.Valid != true || unfenced.Res.Valid != false || unfenced.DW == 0 {
		t.Fatalf("want the fenced run valid and the unfenced one invalid with double writes; got %v and %v (%d double writes)",
			fenced.Res.Valid, unfenced.Res.Valid, unfenced.DW)
	}
	comparePage := runCompare(t, fenced.Dir, unfenced.Dir)

	t.Run("report-valid", func(t *testing.T) { checkReport(t, b, fenced, "report-valid") })
	t.Run("report-invalid", func(t *testing.T) { checkReport(t, b, unfenced, "report-invalid") })
	t.Run("index", func(t *testing.T) {
		ctx := testCtx(t)
		p := openChecked(t, b, web.FileURL(ta.Index), "index", "index")
		links, err := p.Links(ctx)
		noErr(t, err)
		for _, r := range runs {
			if !linksTo(links, web.FileURL(r.report())) {
				t.Errorf("the index has no link to the report %s: %+v", r.report(), links)
			}
		}
	})
	t.Run("compare", func(t *testing.T) { checkCompare(t, b, comparePage, fenced, unfenced) })
	t.Run("serve", func(t *testing.T) { checkServe(t, b, ta, runs, comparePage) })
}

// checkReport opens a run's report.html: the verdict of results.json,
// every figure drawn, the timeline with a mark for each double-writer
// violation and the stories telling them, and the rejected writes when
// there were some.
func checkReport(t *testing.T, b *web.Browser, r run, shot string) {
	ctx := testCtx(t)
	p := openChecked(t, b, web.FileURL(r.report()), shot, shot)
	expectNone(t, "verdict", checkVerdict(t, ctx, p, r.Res.Valid))
	expectNone(t, "figures", checkFigures(t, ctx, p))
	expectNone(t, "timeline", checkTimeline(t, ctx, p, dwName, r.DW))
	expectNone(t, "stories", checkStories(t, ctx, p, dwName, r.DW))
	expectNone(t, "rejected writes", checkRejected(t, ctx, p, r.Rejected))
}

// linksTo reports whether one of links leads to the document at addr,
// whatever its fragment.
func linksTo(links []web.Link, addr string) bool {
	for _, l := range links {
		if strings.SplitN(l.URL, "#", 2)[0] == addr {
			return true
		}
	}
	return false
}
