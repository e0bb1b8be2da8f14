package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/run/runner"
)

// TestPrintSummary: stdout says why every checker that did not pass
// failed, and how many token rejections there were, with the ones no
// newer grant explains (a wrong token).
func TestPrintSummary(t *testing.T) {
	res := checker.Results{Valid: checker.Invalid, Gate: []string{fence.NameDoubleWriter, fence.NameWrongToken},
		Order: []string{fence.NameWrongToken, lock.NameLiveness, stats.Name},
		Checkers: map[string]checker.Result{
			fence.NameWrongToken: {Valid: checker.Invalid, Gating: true, Error: "2 of 5 register rejections hit a holder",
				Details: fence.WrongTokenDetails{Rejections: 5, ViolationCount: 2,
					Violations: []fence.WrongToken{{Message: "process 3 held K and was rejected"}}}},
			lock.NameLiveness: {Valid: checker.Invalid, Error: "1 stall (the lock was not handed on)"},
			stats.Name: {Valid: checker.Valid, Details: stats.StatsDetails{TokenRejections: 5,
				Register: stats.RegisterCounts{Entries: 40, RejectedWrites: 4, RejectedReads: 1}}},
		}}
	var out bytes.Buffer
	printSummary(&out, &runner.CheckOutcome{Results: res, Report: "/r/report.html"})
	for _, want := range []string{
		"wrong-token    false (gating): 2 of 5 register rejections hit a holder",
		"liveness       false: 1 stall (the lock was not handed on)",
		"token rejections: 5 of 40 register operations (4 writes, 1 reads)",
		"wrong token: 2 of 5 token rejections hit a holder no newer grant had replaced, e.g.:\n  process 3 held K and was rejected",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPrintSummaryStoppedAtFirst: a run stopped at its first violation
// says so plainly, not that it is incomplete.
func TestPrintSummaryStoppedAtFirst(t *testing.T) {
	why := "stopped at its first violation (double-writer), as --stop-at-first asks; workload reached 4.2s of 30s, then the final phase ran"
	res := checker.Results{Valid: checker.Invalid, Gate: []string{fence.NameDoubleWriter},
		Completion: &checker.Completion{StoppedAtFirst: true, Why: why},
		Checkers:   map[string]checker.Result{fence.NameDoubleWriter: {Valid: checker.Invalid, Gating: true}}}
	var out bytes.Buffer
	printSummary(&out, &runner.CheckOutcome{Results: res, Report: "/r/report.html"})
	if s := out.String(); !strings.Contains(s, "run: "+why+"\n") || strings.Contains(s, "INCOMPLETE") {
		t.Errorf("summary should say the run stopped at its first violation, not INCOMPLETE:\n%s", s)
	}
}

// TestPrintDiagnosis: after a run not judged valid in which the subject
// completed nothing, the summary is followed by the diagnosis of
// report/diagnose (the one chaos gate's baseline prints); a valid run
// gets none.
func TestPrintDiagnosis(t *testing.T) {
	dir := t.TempDir()
	var lines []byte
	for i, typ := range []history.Type{history.Invoke, history.Fail, history.Invoke, history.Fail, history.Invoke, history.Fail} {
		e := history.Event{Index: int64(i), Time: int64(i) * 1e6, Process: 0, Type: typ, F: history.FAcquire, Key: "SKU-1"}
		if typ == history.Fail {
			e.Error = "acquire: create in /locks/inventory/SKU-1: zk: not authenticated"
		}
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, store.HistoryFile), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		valid checker.Validity
		want  string
	}{
		{checker.Unknown, "the subject could not run: it completed no operation (acquire: 0 of 3 ok)"},
		{checker.Valid, ""},
	} {
		var out bytes.Buffer
		printDiagnosis(&out, &runner.Outcome{Run: &store.Run{Dir: dir}, Check: &runner.CheckOutcome{Results: checker.Results{Valid: tc.valid}}})
		if first, _, _ := strings.Cut(out.String(), "\n"); first != tc.want || tc.want != "" && !strings.Contains(out.String(), "ZKCHAOS_ZK_AUTH") {
			t.Errorf("verdict %s: printed %q, want first line %q", tc.valid, out.String(), tc.want)
		}
	}
}
