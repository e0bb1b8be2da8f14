package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
)

// boundedPage is a page of n double writes, all lost updates but the
// last, a token regression, and of faults nemesis operations (each an
// invocation and its completion).
func boundedPage(n, faults int) Page {
	vs := make([]fence.Violation, n)
	for i := range vs {
		vs[i] = fence.Violation{Kind: fence.KindLostUpdate, Key: "SKU-1", Message: fmt.Sprintf("lost-%03d.", i)}
	}
	vs[n-1].Kind, vs[n-1].Message = fence.KindTokenRegression, "regressed."
	d := fence.DoubleWriterDetails{Violations: vs, ViolationCounts: map[string]int{fence.KindLostUpdate: n - 1, fence.KindTokenRegression: 1}}
	var h []history.Event
	for i := range faults {
		for _, typ := range []history.Type{history.Invoke, history.OK} {
			h = append(h, history.Event{Time: int64(i) * 1e9, Process: history.Nemesis, Type: typ, F: history.FPause})
		}
	}
	return Page{Name: "bounded", Nemesis: h, Links: []Link{{"results", store.ResultsFile}},
		Results: checker.Results{Valid: checker.Invalid, Checkers: map[string]checker.Result{
			fence.NameDoubleWriter: {Valid: checker.Invalid, Details: d}}}}
}

// render writes p and returns its text.
func render(t *testing.T, p Page) (html, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), parse(t, b)
}

// TestBoundedTables: of 300 double writes the page lists 50, the first
// lost updates and the one token regression (the last, but the first of
// its kind), and says the other 250 are in results.json; of 300 nemesis
// operations it lists 200 and says 100 more are in the history. Below
// the bounds it lists all and says nothing of more.
func TestBoundedTables(t *testing.T) {
	html, text := render(t, boundedPage(300, 300))
	for _, want := range []string{"300 violations in results.json", "Listed below: 50 of the 300", "250 more are in results.json",
		"checkers.double-writer.violations", "Listed below: the first 200 nemesis operations", "100 more are in history.jsonl",
		"lost-048.", "regressed.", "#299 token-regression"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(text, "lost-049.") {
		t.Error("the page lists a 51st double write")
	}
	if n := strings.Count(html, `<div class="violation">`); n != MaxViolationsShown {
		t.Errorf("%d double writes listed, want %d", n, MaxViolationsShown)
	}
	if n := strings.Count(html, `<td>pause</td>`); n != MaxNemesisRows {
		t.Errorf("%d nemesis rows, want %d", n, MaxNemesisRows)
	}
	if !strings.Contains(html, `<a href="results.json">results.json</a>`) || !strings.Contains(html, `<code>history.jsonl</code>`) {
		t.Error("results.json (linked by the page) is not a link, or history.jsonl (not linked) is")
	}

	html, text = render(t, boundedPage(MaxViolationsShown, MaxNemesisRows))
	if strings.Contains(text, "more are in") || strings.Contains(text, "Listed below") {
		t.Error("a page within the bounds speaks of more")
	}
	if n := strings.Count(html, `<div class="violation">`); n != MaxViolationsShown {
		t.Errorf("%d double writes listed of %d", n, MaxViolationsShown)
	}
}

// TestListViolations: every kind keeps its first example even when the
// bound is smaller than the kinds found.
func TestListViolations(t *testing.T) {
	kinds := []string{"a", "a", "b", "a", "c", "c"}
	vs := make([]fence.Violation, len(kinds))
	for i, k := range kinds {
		vs[i].Kind = k
	}
	for max, want := range map[int][]int{0: {}, 2: {0, 2}, 3: {0, 2, 4}, 4: {0, 1, 2, 4}, 9: {0, 1, 2, 3, 4, 5}} {
		l := listViolations(vs, max)
		got := []int{}
		for _, v := range l.Shown {
			got = append(got, v.Index)
		}
		if !slices.Equal(got, want) || l.More != len(vs)-len(got) {
			t.Errorf("at most %d: %v (%d more), want %v", max, got, l.More, want)
		}
	}
}
