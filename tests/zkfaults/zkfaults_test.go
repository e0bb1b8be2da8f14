package zkfaults

// Integration tests of the ZooKeeper faults: each fault on the real
// ensemble, short runs with fencing on. A fault must visibly take effect
// (verified in the history), be undone with the ensemble whole again, and
// leave the fenced run valid; and the final phase must heal and read. (A
// controller SIGKILLed in the middle of a server fault: tests/core.) Each
// test logs, per fault, how long it took to take effect and to heal.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

func TestPartitionRefusedInLoopback(t *testing.T) {
	results := t.TempDir()
	for _, list := range []string{"partition-zk-halves", "pause-zk,partition-zk-ring"} {
		r := chaostest.Run(t, results, "--net", "loopback", "--nemesis", list)
		if r.Code != 255 {
			t.Errorf("--net loopback --nemesis %s: exit %d, want 255\nstderr: %s", list, r.Code, r.Stderr)
		}
		last := list[strings.LastIndex(list, ",")+1:]
		if !strings.Contains(r.Stderr, last+": the local backend cannot cut traffic between servers: in loopback mode") {
			t.Errorf("--nemesis %s in loopback: no clear error: %q", list, r.Stderr)
		}
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("a refused run created %d entries in the results folder", len(entries))
	}
}

// zkFaultOp is one nemesis operation: its start and stop, as recorded.
type zkFaultOp struct {
	f, stopF           string
	startInv, startEnd *history.Event
	stopInv, stopEnd   *history.Event
}

// zkNemesisOps pairs the nemesis events of a history into operations.
func zkNemesisOps(h history.ReadResult) (ops []*zkFaultOp, restore *history.Event) {
	var cur *zkFaultOp
	for i := range h.Events {
		e := &h.Events[i]
		if e.Process != history.Nemesis || e.F == history.FSessionGone {
			// A session seen gone is an observation the nemesis
			// records while a fault holds, neither a fault's start
			// nor its stop.
			continue
		}
		switch {
		case e.F == history.FRestore:
			if e.Type != history.Invoke {
				restore = e
			}
		case zkIsStart(e.F) && e.Type == history.Invoke:
			cur = &zkFaultOp{f: e.F, startInv: e}
			ops = append(ops, cur)
		case zkIsStart(e.F) && cur != nil:
			cur.startEnd = e
		case cur != nil && e.Type == history.Invoke:
			cur.stopF, cur.stopInv = e.F, e
		case cur != nil:
			cur.stopEnd = e
		}
	}
	return ops, restore
}

// zkIsStart tells a fault's start from its stop by the stop verbs, so that
// faults added later (with start verbs of their own) pair up too.
func zkIsStart(f string) bool {
	switch f {
	case history.FResume, history.FRestart, history.FHeal, "expire-end":
		return false
	}
	return true
}

// checkZKFaultRun asserts what every ZooKeeper fault run must show and logs
// the figures; it returns the operations whose start verified.
func checkZKFaultRun(t *testing.T, name string, r chaostest.RunResult, wantF string) []*zkFaultOp {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("%s: exit %d, want 0 (valid)\nstdout: %s\nstderr tail: %s", name, r.Code, r.Stdout, chaostest.Tail(r.Stderr, 4000))
	}
	if res := chaostest.ReadResults(t, r.Dir); res.Valid != true || res.Checkers["double-writer"].Valid != true {
		t.Errorf("%s: valid %v, double-writer %v; want both true", name, res.Valid, res.Checkers["double-writer"].Valid)
	}
	h, err := history.ReadFile(filepath.Join(r.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, restore := zkNemesisOps(h)
	var good []*zkFaultOp
	for _, op := range ops {
		if op.startEnd == nil {
			t.Errorf("%s: %s invoked at %d never completed", name, op.f, op.startInv.Time)
			continue
		}
		if op.startEnd.Type == history.Fail {
			t.Logf("%s: %s skipped: %s", name, op.f, op.startEnd.Error)
			continue
		}
		if op.stopEnd == nil {
			t.Errorf("%s: %s on %s never undone", name, op.f, op.startEnd.Value.Target)
			continue
		}
		if !chaostest.Verified(op.stopEnd) {
			t.Errorf("%s: %s undo not verified: %s %s", name, op.stopF, op.stopEnd.Error, op.stopEnd.Value.Detail)
		}
		effect := time.Duration(op.startEnd.Time - op.startInv.Time)
		heal := time.Duration(op.stopEnd.Time - op.stopInv.Time)
		t.Logf("FIGURES %s: %s %s: verified=%v, took effect in %s (%s); %s healed in %s (%s)", name, op.f,
			op.startEnd.Value.Target, chaostest.Verified(op.startEnd), effect.Round(time.Millisecond), op.startEnd.Value.Detail,
			op.stopF, heal.Round(time.Millisecond), op.stopEnd.Value.Detail)
		if !chaostest.Verified(op.startEnd) {
			// Recorded as unverified, with why: allowed, never silent.
			if op.startEnd.Type != history.Info || op.startEnd.Error == "" {
				t.Errorf("%s: unverified %s recorded as %s without a reason", name, op.f, op.startEnd.Type)
			}
			continue
		}
		if wantF == "" || op.f == wantF {
			good = append(good, op)
		}
	}
	if len(good) == 0 {
		t.Errorf("%s: no verified %s in the history (%d nemesis operations)", name, wantF, len(ops))
	}
	if !chaostest.Verified(restore) {
		t.Errorf("%s: final restore missing or not verified: %+v", name, restore)
	} else {
		t.Logf("%s: final restore: %s", name, restore.Value.Detail)
	}
	// Every worker read every key at the end.
	reads := map[string]int{}
	for _, e := range h.Events {
		if e.F == history.FFinalRead && e.Type == history.OK && e.Value != nil && e.Value.N != nil {
			reads[e.Key]++
		}
	}
	if len(reads) != 3 {
		t.Errorf("%s: final reads of %d keys, want 3: %v", name, len(reads), reads)
	}
	for k, n := range reads {
		if n != 6 {
			t.Errorf("%s: %d final reads of %s, want one per worker (6)", name, n, k)
		}
	}
	chaostest.AssertNothingLeft(t, r.Dir)
	return good
}

// TestZKFaults runs each ZooKeeper fault in a short fenced run.
//
// It is slow because it makes nine real runs (each of the eight faults
// alone, then all of them), each with its own ensemble and a 12 s
// workload, at most two at once (chaostest.Tokens). A run of several
// faults may never pick one of them, a shared ensemble would blur which
// fault left it broken, and 12 s already holds at most three faults
// (held 3 s, 1 s apart, each counted only once verified), so a shorter
// run could end with none verified.
func TestZKFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		nemesis string
		netns   bool
		wantF   string
		// detail: one of these must appear in at least one verified
		// fault.
		detail []string
		seed   string
	}{
		{"pause-zk-leader", false, history.FPause, []string{"new leader"}, "1"},
		// Halves ignore who leads: a leader in the minority is replaced,
		// one in the majority keeps it and the minority stops serving.
		// Which happens depends on which server won the first election
		// (usually n3, but a server slow to start under load leaves it
		// to the other two), so either, verified, will do.
		{"partition-zk-halves", true, history.FPartition, []string{"new leader", "stopped serving (cut from leader"}, "2"},
		{"pause-zk", false, history.FPause, nil, "3"},
		{"kill-zk", false, history.FKill, []string{"restarted"}, "4"},
		{"partition-zk-leader", true, history.FPartition, []string{"new leader"}, "5"},
		{"partition-zk-ring", true, history.FPartition, nil, "6"},
		{"partition-zk-bridge", true, history.FPartition, nil, "7"},
		// Both followers stopped: the running leader loses its quorum.
		{"pause-zk-majority", false, history.FPause, []string{"no server serves"}, "9"},
		{"all", true, "", nil, "8"},
	}
	for _, tc := range cases {
		t.Run(tc.nemesis, func(t *testing.T) {
			t.Parallel()
			if tc.netns {
				chaostest.NeedNetns(t)
			} else {
				chaostest.NeedEnsemble(t)
			}
			start := time.Now()
			r := chaostest.Run(t, t.TempDir(), "--fencing", "on", "--nemesis", tc.nemesis, "--nemesis-interval", "1s",
				"--pause", "3s", "--time-limit", "12s", "--recovery", "1s", "--seed", tc.seed, "--name", tc.nemesis)
			t.Logf("run took %s", time.Since(start).Round(time.Millisecond))
			good := checkZKFaultRun(t, tc.nemesis, r, tc.wantF)
			if len(tc.detail) == 0 || len(good) == 0 {
				return
			}
			for _, op := range good {
				for _, d := range tc.detail {
					if strings.Contains(op.startEnd.Value.Detail, d) || strings.Contains(op.stopEnd.Value.Detail, d) {
						return
					}
				}
			}
			t.Errorf("%s: no verified fault shows any of %q", tc.nemesis, tc.detail)
		})
	}
}
