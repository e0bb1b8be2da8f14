package core

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// TestStopAtFirstEndsUnfencedRunEarly: an unfenced run with
// --stop-at-first and no progress shown still runs the online check, ends
// its workload at the first double write long before its time limit,
// heals and reads finally, and is judged invalid by the full check (exit
// 1), with status.json and the summary saying it stopped at its first
// violation rather than that it did not finish. Then chaos replay runs
// it again from its folder until two replays show its violations (at
// most six). The run is the smallest that shows a pause-holder double
// write (two workers on one key, one server), because the replays repeat
// it: the test takes three runs on a quiet machine, more on a loaded one
// (64–89 s on a loaded 2-core machine when it took four).
func TestStopAtFirstEndsUnfencedRunEarly(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	limit := 60 * time.Second
	start := time.Now()
	r := chaostest.Run(t, results, "--fencing", "off", "--nemesis", "pause-holder", "--nemesis-interval", "2s",
		"--workers", "2", "--keys", "1", "--nodes", "1",
		"--time-limit", limit.String(), "--seed", "2", "--name", "stop-at-first", "--stop-at-first", "--progress", "off")
	took := time.Since(start)
	t.Logf("stdout:\n%s", r.Stdout)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (invalid)\nstderr tail: %s", r.Code, chaostest.Tail(r.Stderr, 3000))
	}
	st, err := store.ReadStatus(filepath.Join(r.Dir, store.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.StoppedBecause != store.StoppedAtFirstBecause("double-writer") || !st.FinalPhase || st.Phase != store.PhaseDone {
		t.Errorf("status.json: stopped because %q, final phase %v, phase %s; want %q, true, done",
			st.StoppedBecause, st.FinalPhase, st.Phase, store.StoppedAtFirstBecause("double-writer"))
	}
	if w := time.Duration(st.WorkloadNS); w <= 0 || w > limit/2 || took > limit {
		t.Errorf("workload ran %s and the run took %s; want both well under the time limit %s", w, took, limit)
	}
	res, err := checker.ReadResults(filepath.Join(r.Dir, store.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Completion; res.Valid != checker.Invalid || c == nil || !c.StoppedAtFirst || c.Completed {
		t.Errorf("results.json: valid %s, completion %+v; want invalid, stopped at first, not complete", res.Valid, c)
	}
	if !strings.Contains(r.Stdout, "run: stopped at its first violation (double-writer)") || strings.Contains(r.Stdout, "INCOMPLETE") {
		t.Errorf("the summary should say the run stopped at its first violation:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stderr, `msg="online check: first violation" checker=double-writer`) {
		t.Error("the first violation found online was not logged")
	}
	if code, out := chaostest.Check(t, r.Dir); code != 1 {
		t.Errorf("chaos check on the stopped run: exit %d, want 1\n%s", code, out)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
	assertReplayReproduces(t, r.Dir)
}
