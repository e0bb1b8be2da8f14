package workloads

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/run/matrix"
)

// TestBadInputStartsNothing: an unknown workload, a config run without a
// watcher, a lock recipe for the config workload: each refused with the
// problem on the first line, exit 255, no results folder.
func TestBadInputStartsNothing(t *testing.T) {
	cases := []struct {
		args  []string
		first string
	}{
		{[]string{"--workload", "election-9"}, `--workload: unknown workload "election-9" (known: config, election, lock)`},
		{[]string{"--workload", "election", "--tasks", "0"}, "--workload: --tasks 0: must be at least 1"},
		{[]string{"--workload", "election", "--idempotency", "maybe"}, `--idempotency "maybe": must be on or off`},
		{[]string{"--workload", "lock", "--nemesis", "lost-reply"}, "lost-reply: it acts on the election workload, and this run is --workload lock"},
		{[]string{"--workload", "config", "--workers", "2", "--admins", "2"}, "--admins 2: must be 1..1 with --workers 2"},
		{[]string{"--workload", "config", "--recipe", "herd"}, `--recipe: `},
		{[]string{"--workload", "config", "--gate", "double-writer"}, `--gate: the config workload: unknown gating checker "double-writer" (known: integrity, config-monotonic`},
	}
	for _, tc := range cases {
		results := t.TempDir() + "/results"
		args := append(tc.args, "--time-limit", "2s")
		if !slices.Contains(tc.args, "--nemesis") {
			args = append(args, "--nemesis", "none")
		}
		r := chaostest.Run(t, results, args...)
		first, _, _ := strings.Cut(r.Stderr, "\n")
		if r.Code != 255 || !strings.Contains(first, tc.first) {
			t.Errorf("%v: exit %d, first line %q; want 255 and %q", tc.args, r.Code, first, tc.first)
		}
		if _, err := os.Stat(results); err == nil {
			t.Errorf("%v: refused run made its results folder", tc.args)
		}
	}
}

// TestConfigValidUnderPauses: a correct config client, two competing
// admins, workers paused past their session timeout: valid, every watcher
// applied versions, the final version reached every live client, and the
// run folder is named for the workload. It gives no session timeout:
// the config workload's own (workloads' DefaultTiming, 3 s, first fault
// at 2 s) is what a user gets; the lock gate's 1 s session left a watcher
// without any version in 1 of 4 runs. 12 s, as the gate's config cell
// under pause-worker: one fault cycle (first fault at 2 s, a 6 s pause)
// and the updates of both admins around it.
func TestConfigValidUnderPauses(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	r := chaostest.Run(t, t.TempDir(), append([]string{"--workload", "config", "--admins", "2", "--nemesis", "pause-worker",
		"--time-limit", "12s", "--nemesis-interval", "2s", "--seed", "5"}, chaostest.OneServer()...)...)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
	}
	if tf := chaostest.ReadTest(t, r.Dir); tf.Name != "config" {
		t.Errorf("run named %q, want the workload's name", tf.Name)
	}
	h, err := history.ReadFile(r.Dir + "/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	applied, updates, pauses := map[history.Process]int{}, 0, 0
	for _, e := range h.Events {
		switch {
		case e.F == history.FApplied && e.Type == history.OK:
			applied[e.Process]++
			if e.Value == nil || e.Value.Version == nil || len(e.Value.Digest) != 16 {
				t.Fatalf("applied event without version and digest: %+v", e)
			}
		case e.F == history.FUpdate && e.Type == history.OK:
			updates++
		case e.F == history.FPause && e.Type == history.OK:
			pauses++
		}
	}
	if len(applied) < 4 || updates < 10 || pauses < 1 {
		t.Errorf("%d clients applied versions, %d updates, %d pauses; want >= 4, >= 10, >= 1", len(applied), updates, pauses)
	}
	for _, want := range []string{"config-convergence true", "config-cas     true", "config-consistent true"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.Stdout)
		}
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}

// TestConfigZooCaught: a client that applies the data it read when it set
// its watch, under a new version number, is caught by config-consistent.
func TestConfigZooCaught(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	// Until its first violation, as test-all's config:stale-apply cell:
	// found 0.1-0.2 s in (docs/measurements.md), then the final phase.
	r := chaostest.Run(t, t.TempDir(), append([]string{"--workload", "config", "--recipe", "stale-apply", "--nemesis", "none",
		"--seed", "5"}, chaostest.UntilViolation()...)...)
	if r.Code != 1 || !strings.Contains(r.Stdout, "config-consistent false") {
		t.Fatalf("exit %d; want 1 with config-consistent false\nstdout: %s\nstderr: %s", r.Code, r.Stdout, chaostest.Tail(r.Stderr, 2000))
	}
}

// TestWorkerOfAnotherWorkloadStopsTheRun: a worker written for the lock
// (it ignores --workload and says hello without a workload) in a config
// run is refused as soon as it says hello: exit 255 naming the mismatch,
// and nothing of the run left.
func TestWorkerOfAnotherWorkloadStopsTheRun(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	script := t.TempDir() + "/lock-only-worker"
	body := "#!/bin/sh\n# a worker written for the lock only: it drops --workload W\nskip=0\n" +
		"for a do shift; if [ \"$skip\" = 1 ]; then skip=0; elif [ \"$a\" = --workload ]; then skip=1; else set -- \"$@\" \"$a\"; fi; done\n" +
		"exec " + chaostest.Worker(t) + " --recipe seed \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	r := chaostest.Run(t, t.TempDir(), "--workload", "config", "--recipe", "exec:"+script, "--nemesis", "none", "--time-limit", "5s")
	if r.Code != 255 || !strings.Contains(r.Stderr, "speaks the lock workload's protocol, and this run is --workload config") {
		t.Fatalf("exit %d; want 255 naming the mismatch\nstderr: %s", r.Code, chaostest.Tail(r.Stderr, 3000))
	}
	if r.Dir != "" {
		chaostest.AssertNothingLeft(t, r.Dir)
	}
}

// TestElectionFencing: fenced, the seed recipe's leaders run every task once
// while the application leader is paused past its session; unfenced, the
// paused leader's write of its old term is accepted after a newer term's
// and stale-term names it. Whether one pause makes a stale write land is
// a race in the paused worker (on resume, its expiry notice against its
// write), and a loaded machine fits fewer pauses in a fixed time (a CI
// run of 45 s once saw none land), so the unfenced run does what chaos
// test-all's cells do: it stops at its first stale-term violation
// (--stop-at-first, gated on stale-term, which the run follows online),
// up to matrix.DefaultLimit, and costs time only when the bug is slow to
// show.
//
// Its two runs are parallel subtests, each with its own ensemble and run
// token, so that neither waits for the other. In the fenced one's 20 s
// the workload's 3 s session
// (DefaultTiming, first fault at 2 s) makes each pause of the leader 6 s
// after 2 s quiet, so it holds at most three pauses; a shorter run would
// depose fewer leaders and prove exactly-once across fewer hand-overs.
func TestElectionFencing(t *testing.T) {
	chaostest.LongRun(t)
	t.Parallel()
	for _, tc := range []struct {
		fencing string
		code    int
		want    string
		args    []string
	}{
		{"on", 0, "exactly-once   true", []string{"--time-limit", "20s", "--nemesis-interval", "2s"}},
		{"off", 1, "stale-term     false", []string{"--stop-at-first", "--gate", "stale-term",
			"--time-limit", matrix.DefaultLimit.String(), "--nemesis-interval", "1s"}},
	} {
		t.Run("fencing-"+tc.fencing, func(t *testing.T) {
			t.Parallel()
			chaostest.NeedEnsemble(t)
			args := append([]string{"--workload", "election", "--nemesis", "pause-app-leader", "--fencing", tc.fencing,
				"--seed", "11", "--name", "election-" + tc.fencing}, chaostest.OneServer()...)
			args = append(args, tc.args...)
			r := chaostest.Run(t, t.TempDir(), args...)
			if r.Code != tc.code || !strings.Contains(r.Stdout, tc.want) {
				t.Errorf("--fencing %s: exit %d; want %d with %q\nstdout: %s\nstderr: %s", tc.fencing, r.Code, tc.code, tc.want, r.Stdout, chaostest.Tail(r.Stderr, 2000))
			}
			if r.Dir != "" {
				chaostest.AssertNothingLeft(t, r.Dir)
			}
		})
	}
}
