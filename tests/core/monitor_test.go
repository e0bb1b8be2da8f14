package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/report/anchor"
)

// assertMonitorRecorded checks the runbook monitor of a run with the
// default interval (1 s): samples at that interval through the workload,
// one sample right after every nemesis step, and in report.html a
// snapshot, read as with zkCli, for each violation results.json lists.
func assertMonitorRecorded(t *testing.T, dir string) {
	t.Helper()
	f, err := monitor.ReadFile(filepath.Join(dir, store.MonitorFile))
	if err != nil {
		t.Fatalf("monitor.jsonl: %v", err)
	}
	h, err := history.ReadFile(filepath.Join(dir, store.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	const every = time.Second
	var intervals []monitor.Sample
	byIndex := map[int64]monitor.Sample{}
	for _, s := range f.Samples {
		if s.Why == monitor.WhyNemesis && s.HistoryIndex != nil {
			byIndex[*s.HistoryIndex] = s
		} else {
			intervals = append(intervals, s)
		}
	}
	// A tick during a sample waits for it, and a step's sample may come
	// between: at most the interval plus two bounded samples apart. A
	// sample that waited starts late, and the next tick keeps the
	// ticker's time, so two may be much closer than the interval: extra
	// samples show as more samples than the span has intervals instead.
	for i := 1; i < len(intervals); i++ {
		if gap := time.Duration(intervals[i].TimeNS - intervals[i-1].TimeNS); gap <= 0 || gap > every+2*monitor.Bound(every)+200*time.Millisecond {
			t.Errorf("interval samples %d and %d are %s apart (interval %s)", intervals[i-1].Seq, intervals[i].Seq, gap, every)
		}
	}
	if n := len(intervals); n > 1 {
		span := time.Duration(intervals[n-1].TimeNS - intervals[0].TimeNS)
		if most := int(span/every) + 2; n > most {
			t.Errorf("%d interval samples in %s, want at most %d (one a second)", n, span, most)
		}
	}
	steps := 0
	for _, e := range h.Events {
		if !monitor.IsStep(e) {
			continue
		}
		steps++
		s, ok := byIndex[e.Index]
		if !ok {
			t.Errorf("no sample for nemesis step %d (%s)", e.Index, monitor.StepLabel(e))
		} else if late := time.Duration(s.TimeNS - e.Time); late < 0 || late > 2*time.Second {
			t.Errorf("the sample of step %d (%s) started %s after it", e.Index, monitor.StepLabel(e), late)
		}
	}
	st, err := store.ReadStatus(filepath.Join(dir, store.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	// A sample a second of the workload, less one at each end.
	if want := int(time.Duration(st.WorkloadNS)/every) - 2; steps == 0 || len(intervals) < want {
		t.Errorf("%d nemesis steps, %d interval samples; want steps and a sample a second of the %s workload (%d)",
			steps, len(intervals), time.Duration(st.WorkloadNS), want)
	}
	assertSnapshots(t, dir)
}

// assertSnapshots: every violation of double-writer, grant-overlap and
// token-order (up to the runbook's 20) has its snapshot in report.html,
// with the lock directory listed as zkCli would.
func assertSnapshots(t *testing.T, dir string) {
	t.Helper()
	res, err := checker.ReadResults(filepath.Join(dir, store.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var dw fence.DoubleWriterDetails
	if r := res.Checkers[fence.NameDoubleWriter]; r.DecodeDetails(&dw) == nil {
		for i := range dw.Violations {
			ids = append(ids, anchor.Snapshot(fence.NameDoubleWriter, i))
		}
	}
	var overlap lock.GrantOverlapDetails
	if r := res.Checkers[lock.NameGrantOverlap]; r.DecodeDetails(&overlap) == nil {
		for i := range len(overlap.Overlaps) + len(overlap.FalseReleases) {
			ids = append(ids, anchor.Snapshot(lock.NameGrantOverlap, i))
		}
	}
	var to lock.TokenOrderDetails
	if r := res.Checkers[lock.NameTokenOrder]; r.DecodeDetails(&to) == nil {
		for i := range to.Regressions {
			ids = append(ids, anchor.Snapshot(lock.NameTokenOrder, i))
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, store.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	if !strings.Contains(page, `id="`+anchor.Runbook+`"`) || !strings.Contains(page, `id="`+anchor.Metrics+`"`) {
		t.Error("report.html has no runbook or metrics section")
	}
	for i, id := range ids {
		if i == 20 {
			break
		}
		at := strings.Index(page, `id="`+id+`"`)
		if at < 0 {
			t.Errorf("report.html has no snapshot %s", id)
			continue
		}
		div := page[at:]
		div, _, _ = strings.Cut(div, "</div>")
		if !strings.Contains(div, "[zk] ls ") || !strings.Contains(div, "<td>leader</td>") {
			t.Errorf("snapshot %s shows no lock directory or no leader's mntr:\n%s", id, div)
		}
	}
	t.Logf("runbook: %d violations, snapshots checked for %d", len(ids), min(len(ids), 20))
}
