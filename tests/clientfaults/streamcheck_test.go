package clientfaults

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// TestOnlineGrantOverlapStopsRun: the zoo's release-smallest (it deletes
// the smallest node of the queue, not its own) under pause-holder breaks
// mutual exclusion with nothing to excuse it; the online grant-overlap
// check of the history finds that while the run lasts, and
// --stop-at-first ends the workload there, long before its time limit.
// The full check after the run agrees (gated on grant-overlap, as the
// zoo cell judges it: exit 1).
func TestOnlineGrantOverlapStopsRun(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	limit := 30 * time.Second
	start := time.Now()
	r := chaostest.Run(t, t.TempDir(), append([]string{"--recipe", "release-smallest", "--nemesis", "pause-holder", "--fencing", "on",
		"--session-timeout", "1s", "--pause", "2s", "--op-timeout", "5s", "--nemesis-interval", "2s",
		"--time-limit", limit.String(), "--seed", "1", "--name", "online-grant-overlap", "--stop-at-first", "--progress", "off",
		"--gate", "grant-overlap"}, chaostest.OneServer()...)...)
	took := time.Since(start)
	t.Logf("exit %d in %s\n%s", r.Code, took.Round(time.Second), r.Stdout)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (invalid)\nstderr tail: %s", r.Code, chaostest.Tail(r.Stderr, 4000))
	}
	st, err := store.ReadStatus(filepath.Join(r.Dir, store.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.StoppedBecause != store.StoppedAtFirstBecause("grant-overlap") || !st.FinalPhase {
		t.Errorf("status.json: stopped because %q, final phase %v; want %q, true", st.StoppedBecause, st.FinalPhase,
			store.StoppedAtFirstBecause("grant-overlap"))
	}
	if w := time.Duration(st.WorkloadNS); w <= 0 || w > limit*2/3 {
		t.Errorf("workload ran %s of %s: not stopped early", w, limit)
	}
	i := strings.Index(r.Stderr, `msg="online check: first violation" checker=grant-overlap`)
	if i < 0 {
		t.Fatalf("the first grant-overlap found online was not logged\nstderr tail: %s", chaostest.Tail(r.Stderr, 4000))
	}
	line, _, _ := strings.Cut(r.Stderr[i:], "\n")
	t.Logf("online: %s", line)
	gov := chaostest.ReadResults(t, r.Dir).Checkers["grant-overlap"]
	if gov.Valid != false { // results.json: false is invalid
		t.Errorf("grant-overlap after the run: %v, want invalid (the full check must agree)", gov.Valid)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}
