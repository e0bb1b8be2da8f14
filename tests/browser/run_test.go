package browser

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	web "github.com/zkchaos/zkchaos/internal/browser"
	"github.com/zkchaos/zkchaos/internal/chaostest"
)

// cell is the one matrix cell the package runs: unfenced under
// pause-holder, so the report has double writes to show. It is the seed
// recipe through the exec: subject because its name selects it alone
// (--cells matches substrings: seed/pause-holder/fencing-off also
// selects its docker twin).
const cell = "exec-chaos-worker/pause-holder/fencing-off"

// testAll is what one `chaos test-all` left: the index and the folder of
// its one run.
type testAll struct {
	Index string
	Run   string
}

// runTestAll runs the cell with `chaos test-all` into results and
// returns the index and the run folder; a cell that did not come out as
// expected (exit 0) fails the test, as its report then has no double
// write to show.
func runTestAll(t *testing.T, results string) testAll {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, chaostest.Binary(t), "test-all", "--results", results, "--cells", cell)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("chaos test-all --cells %s: exit %d in %s", cell, chaostest.ExitOf(err), time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("chaos test-all: %v\n%s", err, chaostest.Tail(out.String(), 4000))
	}
	indexes, _ := filepath.Glob(filepath.Join(results, "test-all", "*", "index.html"))
	if len(indexes) != 1 {
		t.Fatalf("want one test-all index under %s, found %q\n%s", results, indexes, out.String())
	}
	type attempt struct {
		Dir string `json:"dir"`
	}
	type cellResult struct {
		Attempts []attempt `json:"attempts"`
	}
	cells := chaostest.ReadJSON[[]cellResult](t, filepath.Dir(indexes[0]), "test-all.json")
	if len(cells) != 1 || len(cells[0].Attempts) != 1 {
		t.Fatalf("test-all.json: want one cell with one attempt, got %+v", cells)
	}
	return testAll{Index: indexes[0], Run: cells[0].Attempts[0].Dir}
}

// TestRealRun opens what one real run wrote, each kind of page in a
// subtest: the run's report.html and the test-all index that links it.
func TestRealRun(t *testing.T) {
	b := web.StartForTest(t) // before the run: no browser, no run
	chaostest.NeedEnsemble(t)
	ta := runTestAll(t, t.TempDir())
	chaostest.AssertNothingLeft(t, ta.Run)
	res := chaostest.ReadResults(t, ta.Run)
	dw := len(res.Checkers["double-writer"].Violations)
	t.Logf("run %s: valid %v, %d double-writer violations in results.json", ta.Run, res.Valid, dw)

	t.Run("report", func(t *testing.T) {
		ctx := testCtx(t)
		p := openChecked(t, b, web.FileURL(filepath.Join(ta.Run, "report.html")), "report")
		expectNone(t, "verdict", checkVerdict(t, ctx, p, res.Valid))
		expectNone(t, "figures", checkFigures(t, ctx, p))
	})
	t.Run("index", func(t *testing.T) {
		ctx := testCtx(t)
		p := openChecked(t, b, web.FileURL(ta.Index), "index")
		links, err := p.Links(ctx)
		noErr(t, err)
		report := filepath.Join(ta.Run, "report.html")
		if !linksTo(links, report) {
			t.Errorf("the index has no link to the run's report %s: %+v", report, links)
		}
	})
}

// linksTo reports whether one of links leads to the file at path.
func linksTo(links []web.Link, path string) bool {
	want := web.FileURL(path)
	for _, l := range links {
		if strings.SplitN(l.URL, "#", 2)[0] == want {
			return true
		}
	}
	return false
}
