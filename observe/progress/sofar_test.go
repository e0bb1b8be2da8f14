package progress

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/suite"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestCanStop: a checker stops a run at its first violation when it runs
// online or judges the run so far; the checks of the run so far are the
// gate's checkers of the second kind only.
func TestCanStop(t *testing.T) {
	lockCs := suite.All()
	for name, want := range map[string]bool{fence.NameDoubleWriter: true, lock.NameGrantOverlap: true,
		lock.NameLiveness: true, lock.NameHerd: false, "register": false, "stats": false, "no-such-checker": false} {
		if got := CanStop(lockCs, name); got != want {
			t.Errorf("CanStop(%s) = %v, want %v", name, got, want)
		}
	}
	if !Online(election.NameStaleTerm) {
		t.Error("stale-term has no online version")
	}
	gate := []string{lock.NameLiveness, fence.NameDoubleWriter, lock.NameHerd}
	var names []string
	for _, c := range SoFarChecks(lockCs, gate) {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{lock.NameLiveness}) {
		t.Errorf("checks of the run so far for gate %v: %v, want [liveness] (double-writer runs online)", gate, names)
	}
}

// TestFollowSoFar: the checks of the run so far read the run's files as
// they grow (the history, then the apply log) and tell first the checker
// whose records show a violation, once, with its count on the line.
func TestFollowSoFar(t *testing.T) {
	dir := t.TempDir()
	recs := Records{History: filepath.Join(dir, "history.jsonl"), ApplyLog: filepath.Join(dir, "register.jsonl")}
	task := "billing:2026-11-30:t1"
	writeLines(t, recs.History, history.Event{Index: 0, Time: 1, Process: 0, Type: history.Invoke, F: history.FCampaign, Key: "billing"})
	tr := started()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	firsts := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- tr.FollowSoFar(ctx, recs, SoFarChecks(append(suite.All()[:1], election.All()...), election.DefaultGate),
			slog.New(slog.NewTextHandler(&logs, nil)), func(c string) { firsts <- c })
	}()
	time.Sleep(1500 * time.Millisecond) // a look without an apply log: nothing
	entry := func(seq int64, op string, exec int64) register.Entry {
		return register.Entry{Seq: seq, Op: op, Service: "billing", Task: task, Token: 5, HasToken: op != "init", Accepted: true, Executions: exec}
	}
	writeLines(t, recs.ApplyLog, entry(1, "init", 0), entry(2, "complete", 1))
	time.Sleep(1500 * time.Millisecond) // run once: nothing
	select {
	case c := <-firsts:
		t.Fatalf("%s told before any violation", c)
	default:
	}
	writeLines(t, recs.ApplyLog, entry(3, "complete", 2))
	select {
	case c := <-firsts:
		if c != election.NameExactlyOnce {
			t.Errorf("first told %s, want %s", c, election.NameExactlyOnce)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task run twice was not found")
	}
	time.Sleep(1500 * time.Millisecond) // another look: counted, not told again
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, _ := tr.Status()
	if len(st.Online) != 1 || st.Online[0].Name != election.NameExactlyOnce || st.Online[0].Violations != 1 || len(firsts) != 0 {
		t.Errorf("line %+v, %d more told; want exactly-once with 1 violation, told once", st.Online, len(firsts))
	}
	if out := logs.String(); strings.Count(out, "first violation") != 1 || !strings.Contains(out, "ran 2 times") {
		t.Errorf("log: %s", out)
	}
}

// TestFollowSoFarStopsOnDamage: records that cannot be read stop the
// looks, on the line and in the error.
func TestFollowSoFarStopsOnDamage(t *testing.T) {
	dir := t.TempDir()
	recs := Records{History: filepath.Join(dir, "history.jsonl"), ApplyLog: filepath.Join(dir, "register.jsonl")}
	if err := os.WriteFile(recs.History, []byte("not json\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := started()
	err := tr.FollowSoFar(context.Background(), recs, []checker.Checker{{Name: lock.NameLiveness, SoFar: lock.CheckLivenessSoFar}},
		slog.New(slog.DiscardHandler), nil)
	st, _ := tr.Status()
	if err == nil || len(st.Online) != 1 || st.Online[0].Stopped == "" {
		t.Errorf("error %v, line %+v; want both to say the looks stopped", err, st.Online)
	}
}

// writeLines appends each value as a JSON line to path.
func writeLines[T any](t *testing.T, path string, vs ...T) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}
