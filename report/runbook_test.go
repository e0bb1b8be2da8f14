package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/resource/register"
)

const startWall = int64(1_700_000_000_000_000_000)

// sample is a monitor sample at t seconds in which process 4's session
// 0x4 is gone and process 7 (session 0x7) holds SKU-1.
func sample(seq int, t float64, why string) monitor.Sample {
	return monitor.Sample{Seq: seq, TimeNS: int64(t * 1e9), TookNS: 10e6, Why: why, Session: "0x99",
		Dirs: []monitor.Dir{
			{Path: "/locks/inventory/SKU-1", Cversion: 8, NumChildren: 2, Children: []monitor.Child{
				{Name: "lock-0000000003", Seq: 3, Owner: "0x7"}, {Name: "lock-0000000004", Seq: 4, Owner: "0x5"}}},
			{Path: "/locks/inventory/SKU-2", Error: "no answer within 800ms"},
		},
		Servers: []monitor.Server{
			{ID: 1, Addr: "198.18.0.2:2181", Mntr: &monitor.Mntr{State: "leader", AvgLatency: 2.5, MaxLatency: 56, Znodes: 15}, Sessions: []string{"0x5", "0x7", "0x99"}},
			{ID: 2, Addr: "198.18.0.3:2181", MntrError: "mntr: i/o timeout", ConsError: "cons: i/o timeout"},
		}}
}

// runbookPage has violations of the three checkers at 1.5 s, 2.5 s
// (before and after the samples at 1 s and 2 s) and one at 0.5 s, before
// any sample.
func runbookPage(t *testing.T, nDW int) Page {
	t.Helper()
	var vs []fence.Violation
	for i := range nDW {
		e := register.Entry{Seq: int64(10 + i), Key: "SKU-1", Wall: startWall + 2_500_000_000 + int64(i)}
		vs = append(vs, fence.Violation{Kind: fence.KindTokenRegression, Key: "SKU-1", Processes: []int{7, 4}, Entries: []register.Entry{e}})
	}
	res := checker.Results{Checkers: map[string]checker.Result{
		fence.NameDoubleWriter: {Valid: checker.Invalid, Details: fence.DoubleWriterDetails{Violations: vs}},
		lock.NameGrantOverlap: {Valid: checker.Invalid, Details: lock.GrantOverlapDetails{
			Overlaps:      []lock.Overlap{{Key: "SKU-1", Holder: 4, Intruder: 7, GrantedNS: 1.5e9}},
			FalseReleases: []lock.FalseRelease{{Key: "SKU-1", Holder: 4, Session: "0x4", ReleaseNS: 2.5e9}}}},
		lock.NameTokenOrder: {Valid: checker.Invalid, Details: lock.TokenOrderDetails{
			Regressions: []lock.TokenRegression{{Key: "SKU-1", Tokens: [2]int64{9, 8}, Processes: [2]int{7, 4}, TimesNS: [2]int64{1e8, 5e8}}}}},
	}}
	h := []history.Event{
		{Time: 1e8, Process: 4, Type: history.OK, F: history.FSession, Value: &history.Value{Session: "0x4", State: "connected"}},
		{Time: 2e8, Process: 7, Type: history.OK, F: history.FAcquire, Key: "SKU-1", Value: &history.Value{Session: "0x7", Token: history.Int64(9)}},
		{Time: 3e9, Process: 4, Type: history.OK, F: history.FSession, Value: &history.Value{Session: "0x44", State: "connected"}},
	}
	return Page{Name: "runbook", Results: res, History: h, StartWall: startWall,
		Monitor: []monitor.Sample{sample(0, 1, monitor.WhyInterval), sample(1, 2, monitor.WhyNemesis)}}
}

func TestRunbookShowsTheSnapshotBeforeEachViolation(t *testing.T) {
	p := runbookPage(t, 1)
	p.Monitor[1].Step = "pause ok process 4"
	rv := runbook(p)
	want := []struct {
		id, seq, none string
	}{
		{anchor.Snapshot(fence.NameDoubleWriter, 0), "1", ""},
		{anchor.Snapshot(lock.NameGrantOverlap, 0), "0", ""},
		{anchor.Snapshot(lock.NameGrantOverlap, 1), "1", ""},
		{anchor.Snapshot(lock.NameTokenOrder, 0), "", "first sample was taken after it"},
	}
	if len(rv.Snapshots) != len(want) {
		t.Fatalf("%d snapshots, want %d", len(rv.Snapshots), len(want))
	}
	for i, w := range want {
		s := rv.Snapshots[i]
		if s.ID != w.id || (w.none == "" && fmt.Sprint(s.Seq) != w.seq) || !strings.Contains(s.None, w.none) || (w.none != "" && s.None == "") {
			t.Errorf("snapshot %d: id %q sample %d none %q; want %q sample %s none %q", i, s.ID, s.Seq, s.None, w.id, w.seq, w.none)
		}
	}
	dw := rv.Snapshots[0]
	for _, frag := range []string{
		"ls /locks/inventory/SKU-1", "cversion = 8", "lock-0000000003\n      first: holds the lock; ephemeralOwner = 0x7; session connected to n1; process 7 by the history",
		"lock-0000000004\n      ephemeralOwner = 0x5; session connected to n1",
		"process 4:\n      session 0x4: owns no lock node; session listed by no server that answered cons (expired, or its client disconnected); n2 gave no list",
		"process 7:\n      session 0x7: owns /locks/inventory/SKU-1/lock-0000000003",
	} {
		if !strings.Contains(dw.ZkCli, frag) {
			t.Errorf("double-writer snapshot lacks %q:\n%s", frag, dw.ZkCli)
		}
	}
	// Process 4's second session came after the violation.
	if strings.Contains(dw.ZkCli, "0x44") || strings.Contains(dw.ZkCli, "SKU-2") {
		t.Errorf("snapshot shows a later session or another key's directory:\n%s", dw.ZkCli)
	}
	if dw.Why != "nemesis: pause ok process 4" || dw.Before != "0.500s" {
		t.Errorf("sample why %q, %q before; want the nemesis step, 0.500s", dw.Why, dw.Before)
	}
	n1, n2 := dw.Servers[0], dw.Servers[1]
	if n1.State != "leader" || n1.Listed != "2: 0x5, 0x7 (and the monitor's own)" || n2.MntrError == "" || n2.ConsError == "" {
		t.Errorf("servers %+v", dw.Servers)
	}
	if rv.Samples != 2 || rv.Interval != 1 || rv.Steps != 1 || rv.Errors != 2 {
		t.Errorf("summary %+v", rv)
	}
}

func TestRunbookIsBounded(t *testing.T) {
	rv := runbook(runbookPage(t, 25))
	if len(rv.Snapshots) != maxSnapshots || rv.Omitted != 25+3-maxSnapshots {
		t.Errorf("%d snapshots, %d omitted; want %d and %d", len(rv.Snapshots), rv.Omitted, maxSnapshots, 25+3-maxSnapshots)
	}
	html, _ := render(t, runbookPage(t, 25))
	if !strings.Contains(html, fmt.Sprintf("first %d violations; %d more not shown", maxSnapshots, 8)) {
		t.Error("the page does not say how many violations are not shown")
	}
}

// A run without monitor.jsonl still has every snapshot's anchor, saying
// why there is no snapshot.
func TestRunbookWithoutMonitor(t *testing.T) {
	p := runbookPage(t, 1)
	p.Monitor, p.MonitorNote = nil, "Not recorded: the run has no monitor.jsonl."
	html, _ := render(t, p)
	for _, id := range []string{anchor.Runbook, anchor.Snapshot(fence.NameDoubleWriter, 0), anchor.Snapshot(lock.NameTokenOrder, 0)} {
		if !strings.Contains(html, `id="`+id+`"`) {
			t.Errorf("no element %s", id)
		}
	}
	if !strings.Contains(html, "No snapshot: the run has no monitor.jsonl.") {
		t.Error("the page does not say why there is no snapshot")
	}
	text := parse(t, []byte(html))
	if !strings.Contains(text, "waiters per lock path") || strings.Count(text, notRecorded) < 2 {
		t.Errorf("metrics without a monitor do not say not recorded:\n%s", text)
	}
}

func TestMetricsFromAHandMadeRun(t *testing.T) {
	p := runbookPage(t, 1)
	p.History = append(p.History,
		history.Event{Time: 3e9, Process: 2, Type: history.Info, F: history.FRelease, Error: "zk: connection closed"},
		history.Event{Time: 3e9, Process: 3, Type: history.Fail, F: history.FAcquire, Error: "KeeperErrorCode = ConnectionLoss for /locks"},
		history.Event{Time: 3e9, Process: 3, Type: history.Fail, F: history.FAcquire, Error: "timeout"},
		history.Event{Time: 3e9, Process: history.Nemesis, Type: history.Info, F: history.FPause, Error: "connection lost"})
	p.Monitor = []monitor.Sample{
		{TimeNS: 1e9, Dirs: []monitor.Dir{{Path: "/l/SKU-1", Cversion: 4, NumChildren: 2, Children: make([]monitor.Child, 2)}}},
		{TimeNS: 2e9, Dirs: []monitor.Dir{{Path: "/l/SKU-1", Cversion: 10, NumChildren: 4, Children: make([]monitor.Child, 4)}}},
		{TimeNS: 3e9, Dirs: []monitor.Dir{{Path: "/l/SKU-1", Error: "timeout"}}},
	}
	p.Results.Checkers[stats.Name] = checker.Result{Valid: checker.Valid, Details: stats.StatsDetails{
		Ops:        map[string]stats.OpCounts{history.FAcquire: {OK: 18, Fail: 2}},
		LockWaitMS: stats.Percentiles{Count: 18, P50: 1, P95: 2, P99: 3, Max: 4}, Timeouts: 2,
		Sessions: map[string]int{"disconnected": 3, "expired": 1}, TokenRejections: 5,
		Register: stats.RegisterCounts{ByReason: map[string]int{"stale token": 5}}}}
	p.Results.Checkers[lock.NameHerd] = checker.Result{Valid: checker.Valid, Details: lock.HerdDetails{Wakeups: 7, Acquires: 20}}
	mv := metrics(p)
	got := map[string]string{}
	for _, r := range mv.Rows {
		got[r.Name] = r.Value
	}
	for name, want := range map[string]string{
		"waiters per lock path":      "SKU-1: max 3, mean 2.00",
		"lock wait":                  "p50 1.0 ms, p95 2.0 ms, p99 3.0 ms, max 4.0 ms (18)",
		"hold time":                  "none",
		"timeout rate":               "2 of 20 (10.0%)",
		"session Disconnected":       "3",
		"session Expired":            "1",
		"nodes created / deleted":    "4 / 2 (SKU-1: 4 / 2)",
		"ConnectionLoss":             "2",
		"predecessor watch triggers": "7 over 20 acquire answers (0.35 each)",
		"re-checks":                  "7 after a watch; without a notification: not recorded",
		"token rejections":           "5 (stale token: 5)",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	if mv.Waiters == nil || (mv.Waiters.SVG == "" && mv.Waiters.Note == "") {
		t.Errorf("no waiters figure: %+v", mv.Waiters)
	}
	if html, _ := render(t, p); !bytes.Contains([]byte(html), []byte(`id="`+anchor.Metrics+`"`)) {
		t.Error("no metrics section id")
	}
}
