package pageload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/suite"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/testkit/browser"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
	"github.com/zkchaos/zkchaos/report"
)

// TestMeasure: a page of a known number of elements is loaded, drawn
// and counted, in the order the browser does it.
func TestMeasure(t *testing.T) {
	b := browser.Need(t)
	page := filepath.Join(t.TempDir(), "p.html")
	body := "<!DOCTYPE html><html><head><title>t</title></head><body>" + strings.Repeat("<p>x</p>", 100) + "</body></html>"
	if err := os.WriteFile(page, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := Measure(context.Background(), b, []string{page}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || len(all[0]) != 2 {
		t.Fatalf("timings %v, want 1 page × 2 loads", all)
	}
	for _, tm := range all[0] {
		if tm.Elements != 104 || tm.DOMContentLoaded <= 0 || tm.Load < tm.DOMContentLoaded || tm.Drawn < tm.Load {
			t.Errorf("timing %+v: want 104 elements (html, head, title, body, 100 p) and 0 < DOMContentLoaded ≤ load ≤ drawn", tm)
		}
	}
	if _, err := Measure(context.Background(), b, []string{filepath.Join(t.TempDir(), "missing.html")}, 1); err == nil {
		t.Error("a missing page measured")
	}
}

// BenchmarkPageLoad100k loads the report of a synthetic 100 000-operation
// run (internal/testkit/synth; checked by every checker, as runner.Check does)
// in headless Chromium; ms-drawn is the bound's figure (under 2 000).
func BenchmarkPageLoad100k(b *testing.B) {
	br := browser.Need(b)
	r, err := synth.Generate(synth.Spec{Ops: 100_000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	res := suite.RunAll(context.Background(), checker.Input{History: r.Events, ApplyLog: r.ApplyLog, StartWall: r.StartWall,
		Fencing: r.Spec.Fencing, SessionTimeout: r.Spec.SessionTimeout, Dir: dir}, nil)
	var nem []history.Event
	for _, e := range r.Events {
		if e.Process == history.Nemesis {
			nem = append(nem, e)
		}
	}
	page := filepath.Join(dir, "report.html")
	if err := report.Write(page, report.Page{Name: "synthetic", Dir: dir, Results: res, Nemesis: nem, History: r.Events,
		ApplyLog: r.ApplyLog, StartWall: r.StartWall}); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(page)
	b.ResetTimer() // one browser for all b.N loads
	ts, err := Measure(context.Background(), br, []string{page}, b.N)
	if err != nil {
		b.Fatal(err)
	}
	m := Median(ts[0])
	b.ReportMetric(float64(st.Size()), "page-bytes")
	b.ReportMetric(float64(m.Load)/float64(time.Millisecond), "ms-load")
	b.ReportMetric(float64(m.Drawn)/float64(time.Millisecond), "ms-drawn")
}

// TestMedian: the load of median drawn time by the nearest-rank rule,
// the lower of the two middle loads for an even count.
func TestMedian(t *testing.T) {
	ts := []browser.Timing{{Drawn: 40, Elements: 4}, {Drawn: 10, Elements: 1}, {Drawn: 30, Elements: 3}, {Drawn: 20, Elements: 2}}
	if m := Median(ts); m.Elements != 2 {
		t.Errorf("median of 4 loads %+v, want the one drawn at 20", m)
	}
	if m := Median(ts[:3]); m.Elements != 3 {
		t.Errorf("median of 3 loads %+v, want the one drawn at 30", m)
	}
	if ts[0].Drawn != 40 {
		t.Error("Median sorted its argument")
	}
}
