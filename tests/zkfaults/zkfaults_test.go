package zkfaults

// Integration tests of the ZooKeeper faults: each fault on the real
// ensemble, short runs with fencing on. A fault must visibly take effect
// (verified in the history), be undone with the ensemble whole again, and
// leave the fenced run valid; and the final phase must heal and read. (A
// controller SIGKILLed in the middle of a server fault: tests/core.) Each
// test logs, per fault, how long it took to take effect and to heal.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
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
// the figures; it returns every fault operation, in the order of their
// starts.
func checkZKFaultRun(t *testing.T, name string, r chaostest.RunResult) []*zkFaultOp {
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
		if !chaostest.Verified(op.startEnd) && (op.startEnd.Type != history.Info || op.startEnd.Error == "") {
			// Unverified is allowed, recorded with why, never silent.
			t.Errorf("%s: unverified %s recorded as %s without a reason", name, op.f, op.startEnd.Type)
		}
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
	return ops
}

// verified says op took effect and was undone, both verified.
func (op *zkFaultOp) verified() bool {
	return op.startEnd != nil && chaostest.Verified(op.startEnd) && op.stopEnd != nil && chaostest.Verified(op.stopEnd)
}

// shows says op's start or undo records any of details.
func (op *zkFaultOp) shows(details []string) bool {
	for _, d := range details {
		if strings.Contains(op.startEnd.Value.Detail, d) || strings.Contains(op.stopEnd.Value.Detail, d) {
			return true
		}
	}
	return false
}

// zkFault is one fault of TestZKFaults and what its run must show.
type zkFault struct {
	nemesis string
	wantF   string
	// detail: one of these must appear in its start's or undo's record.
	detail []string
}

// TestZKFaults injects each ZooKeeper fault once, verified, in fenced
// runs that must stay valid, then all of them drawn at random.
//
// The eight faults go in two runs of four, each run following a schedule
// (chaostest.Sequence): every fault is injected exactly once, so none can
// be missed as a draw could miss it, and each one's start and undo are
// verified on their own in the history, the undo only once the ensemble
// is whole again, so a fault that left it broken fails its own undo, not
// the next fault. A run of its own per fault proved the same at the cost
// of six more ensembles' start and end. The third run, --nemesis all,
// shows the faults drawn at random side by side with the client faults.
//
// It is slow because its three runs last 30 s, 30 s and 12 s of
// workload, at most two at once (chaostest.Tokens): each fault is held
// 3 s, the next injected once it is undone, with room for starts that
// wait for an election.
func TestZKFaults(t *testing.T) {
	chaostest.LongRun(t)
	t.Parallel()
	runs := [][]zkFault{{
		{"pause-zk-leader", history.FPause, []string{"new leader"}},
		// Halves ignore who leads: a leader in the minority is replaced,
		// one in the majority keeps it and the minority stops serving.
		// Which happens depends on which server won the first election
		// (usually n3, but a server slow to start under load leaves it
		// to the other two), so either, verified, will do.
		{"partition-zk-halves", history.FPartition, []string{"new leader", "stopped serving (cut from leader"}},
		{"pause-zk", history.FPause, nil},
		{"kill-zk", history.FKill, []string{"restarted"}},
	}, {
		{"partition-zk-leader", history.FPartition, []string{"new leader"}},
		{"partition-zk-ring", history.FPartition, nil},
		{"partition-zk-bridge", history.FPartition, nil},
		// Both followers stopped: the running leader loses its quorum.
		{"pause-zk-majority", history.FPause, []string{"no server serves"}},
	}}
	for i, faults := range runs {
		var names []string
		for _, f := range faults {
			names = append(names, f.nemesis)
		}
		name := strings.Join(names, ",")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			chaostest.NeedNetns(t)
			sched := chaostest.Sequence(t, 3*time.Second, names...)
			r := chaostest.Run(t, t.TempDir(), append(sched, "--fencing", "on", "--recovery", "1s",
				"--seed", strconv.Itoa(i+1), "--name", fmt.Sprintf("zkfaults-%d", i+1))...)
			ops := checkZKFaultRun(t, name, r)
			if st := chaostest.ReadJSON[store.Status](t, r.Dir, store.StatusFile); st.StoppedBecause != store.StopScheduleDone {
				t.Errorf("the workload stopped because %q, want %q: the run ends after its schedule's last entry", st.StoppedBecause, store.StopScheduleDone)
			}
			if len(ops) != len(faults) {
				t.Errorf("%d fault operations in the history, want one per entry of the schedule (%d)", len(ops), len(faults))
			}
			for j, f := range faults[:min(len(faults), len(ops))] {
				op := ops[j]
				switch {
				case op.f != f.wantF || !op.verified():
					t.Errorf("%s: operation %d is %s, verified %v; want %s, its start and undo verified", f.nemesis, j+1, op.f, op.verified(), f.wantF)
				case len(f.detail) > 0 && !op.shows(f.detail):
					t.Errorf("%s: its record shows none of %q", f.nemesis, f.detail)
				}
			}
		})
	}
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		chaostest.NeedNetns(t)
		r := chaostest.Run(t, t.TempDir(), "--fencing", "on", "--nemesis", "all", "--nemesis-interval", "1s",
			"--pause", "3s", "--time-limit", "12s", "--recovery", "1s", "--seed", "8", "--name", "all")
		ops := checkZKFaultRun(t, "all", r)
		if !slices.ContainsFunc(ops, (*zkFaultOp).verified) {
			t.Errorf("all: no verified fault in the history (%d nemesis operations)", len(ops))
		}
	})
}
