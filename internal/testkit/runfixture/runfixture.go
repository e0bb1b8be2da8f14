// Package runfixture writes small run folders for the tests of what reads
// them (runview, compare, serve, chaos compare and serve): the folder made
// by store.Create (with its latest links), a hand-made lock history, and
// a results.json written by checker.WriteResults holding the real
// checkers' evidence types. Nothing here runs a checker: the verdicts are
// the test's to choose.
package runfixture

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
)

// Spec is one run to write.
type Spec struct {
	Name    string
	Start   time.Time
	Recipe  string // default "seed"
	Fencing string // default "on"
	Nemesis []string
	// Invalid gives the run double-writer violations (2 lost-update, 1
	// token-regression, the first at 1.5 s); else it is valid.
	Invalid bool
	// Unchecked leaves results.json out.
	Unchecked bool
}

// Write makes the run under base and returns its folder.
func Write(t testing.TB, base string, s Spec) string {
	t.Helper()
	if s.Recipe == "" {
		s.Recipe = "seed"
	}
	if s.Fencing == "" {
		s.Fencing = "on"
	}
	if s.Nemesis == nil {
		s.Nemesis = []string{"pause-holder"}
	}
	run, err := store.Create(base, s.Name, s.Start)
	if err != nil {
		t.Fatal(err)
	}
	writeJSON(t, run.Path(store.TestFile), map[string]any{"name": s.Name, "recipe": s.Recipe, "workload": "lock",
		"nemesis": s.Nemesis, "fencing": s.Fencing, "time_limit": int64(20 * time.Second), "seed": 7,
		"session_timeout": int64(3 * time.Second), "workers": 4, "start": s.Start, "start_wall_ns": s.Start.UnixNano()})
	writeHistory(t, run.Path(store.HistoryFile))
	if err := store.WriteStatus(run.Path(store.StatusFile), store.Status{Phase: store.PhaseDone,
		StoppedBecause: store.StopTimeLimit, TimeLimitNS: int64(20 * time.Second), WorkloadNS: int64(20 * time.Second), FinalPhase: true}); err != nil {
		t.Fatal(err)
	}
	if !s.Unchecked {
		if err := checker.WriteResults(run.Path(store.ResultsFile), results(s.Invalid)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(run.Path(store.ReportFile), []byte("<!DOCTYPE html><title>report</title>\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return run.Dir
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeHistory writes two critical sections and a paused holder.
func writeHistory(t testing.TB, path string) {
	t.Helper()
	tok := func(v int64) *history.Value { return &history.Value{Token: history.Int64(v)} }
	evs := []history.Event{
		{Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "k"},
		{Process: 0, Type: history.OK, F: history.FAcquire, Key: "k", Value: tok(1)},
		{Process: history.Nemesis, Type: history.Invoke, F: "pause", Value: &history.Value{Target: "process 0"}},
		{Process: history.Nemesis, Type: history.OK, F: "pause", Value: &history.Value{Target: "process 0", Verified: history.Bool(true)}},
		{Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "k"},
		{Process: history.Nemesis, Type: history.Invoke, F: "resume", Value: &history.Value{Target: "process 0"}},
		{Process: history.Nemesis, Type: history.OK, F: "resume", Value: &history.Value{Target: "process 0", Verified: history.Bool(true)}},
		{Process: 1, Type: history.OK, F: history.FAcquire, Key: "k", Value: tok(2)},
		{Process: 1, Type: history.Invoke, F: history.FRelease, Key: "k", Value: tok(2)},
		{Process: 1, Type: history.OK, F: history.FRelease, Key: "k", Value: tok(2)},
	}
	var b bytes.Buffer
	for i, e := range evs {
		e.Index, e.Time = int64(i), int64(i+1)*int64(500*time.Millisecond)
		line, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// results is a results.json with the gate's checkers and stats.
func results(invalid bool) checker.Results {
	dw := fence.DoubleWriterDetails{ViolationCounts: map[string]int{}}
	r := checker.Results{Valid: checker.Valid, Gate: []string{fence.NameDoubleWriter},
		Order: []string{fence.NameDoubleWriter, stats.Name}, CheckedAt: time.Now().UTC(),
		Completion: &checker.Completion{Completed: true, Phase: string(store.PhaseDone), ReachedNS: int64(20 * time.Second),
			TimeLimitNS: int64(20 * time.Second), FinalPhase: true}}
	dwValid := checker.Valid
	if invalid {
		dw.ViolationCounts = map[string]int{"lost-update": 2, "token-regression": 1}
		dw.FirstViolationAfterNS = history.Int64(int64(1500 * time.Millisecond))
		dwValid, r.Valid = checker.Invalid, checker.Invalid
		r.Reasons = []string{"double-writer: false: 3 violations in the apply log"}
	}
	st := stats.StatsDetails{Ops: map[string]stats.OpCounts{"acquire": {OK: 2}, "release": {OK: 1}},
		LockWaitMS: stats.Percentiles{Count: 2, P50: 10, P99: 1500}, AcquiresPerS: 0.1, TokenRejections: 1}
	r.Checkers = map[string]checker.Result{
		fence.NameDoubleWriter: {Valid: dwValid, Gating: true, Details: dw},
		stats.Name:             {Valid: checker.Valid, Details: st},
	}
	return r
}
