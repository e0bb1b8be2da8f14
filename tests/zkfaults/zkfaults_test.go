package zkfaults

// Integration tests of the ZooKeeper faults: each fault on the real
// ensemble, short runs with fencing on. A fault must visibly take effect
// (verified in the history), be undone with the ensemble whole again, and
// leave the fenced run valid; the final phase must heal and read; and a
// controller SIGKILLed in the middle of a server fault must leave nothing.
// Each test logs, per fault, how long it took to take effect and to heal.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/chaostest"
	"github.com/zkchaos/zkchaos/netns"
	"github.com/zkchaos/zkchaos/proc"
)

func zkNeedNetns(t *testing.T) {
	t.Helper()
	chaostest.NeedEnsemble(t)
	if err := netns.Available(); err != nil {
		t.Skipf("partitions need network namespaces: %v", err)
	}
}

func TestPartitionRefusedInLoopback(t *testing.T) {
	results := t.TempDir()
	for _, list := range []string{"partition-zk-halves", "pause-zk,partition-zk-ring"} {
		r := chaostest.Run(t, results, "--net", "loopback", "--nemesis", list)
		if r.Code != 255 {
			t.Errorf("--net loopback --nemesis %s: exit %d, want 255\nstderr: %s", list, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "need network namespaces") {
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
		if e.Process != history.Nemesis {
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

func zkVerified(e *history.Event) bool {
	return e != nil && e.Value != nil && e.Value.Verified != nil && *e.Value.Verified
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
		if !zkVerified(op.stopEnd) {
			t.Errorf("%s: %s undo not verified: %s %s", name, op.stopF, op.stopEnd.Error, op.stopEnd.Value.Detail)
		}
		effect := time.Duration(op.startEnd.Time - op.startInv.Time)
		heal := time.Duration(op.stopEnd.Time - op.stopInv.Time)
		t.Logf("FIGURES %s: %s %s: verified=%v, took effect in %s (%s); %s healed in %s (%s)", name, op.f,
			op.startEnd.Value.Target, zkVerified(op.startEnd), effect.Round(time.Millisecond), op.startEnd.Value.Detail,
			op.stopF, heal.Round(time.Millisecond), op.stopEnd.Value.Detail)
		if !zkVerified(op.startEnd) {
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
	if !zkVerified(restore) {
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
func TestZKFaults(t *testing.T) {
	cases := []struct {
		nemesis string
		netns   bool
		wantF   string
		// detail must appear in at least one verified start.
		detail string
		seed   string
	}{
		// The first leader of a fresh ensemble is n3 (highest id, equal
		// zxids); seed 2's first halves put n3 alone in the minority, so
		// the ensemble must elect a new leader.
		{"pause-zk-leader", false, history.FPause, "new leader", "1"},
		{"partition-zk-halves", true, history.FPartition, "new leader", "2"},
		{"pause-zk", false, history.FPause, "", "3"},
		{"kill-zk", false, history.FKill, "restarted", "4"},
		{"partition-zk-leader", true, history.FPartition, "new leader", "5"},
		{"partition-zk-ring", true, history.FPartition, "", "6"},
		{"partition-zk-bridge", true, history.FPartition, "", "7"},
		{"all", true, "", "", "8"},
	}
	for _, tc := range cases {
		t.Run(tc.nemesis, func(t *testing.T) {
			if tc.netns {
				zkNeedNetns(t)
			} else {
				chaostest.NeedEnsemble(t)
			}
			start := time.Now()
			r := chaostest.Run(t, t.TempDir(), "--fencing", "on", "--nemesis", tc.nemesis, "--nemesis-interval", "1s",
				"--pause", "3s", "--time-limit", "12s", "--recovery", "1s", "--seed", tc.seed, "--name", tc.nemesis)
			t.Logf("run took %s", time.Since(start).Round(time.Millisecond))
			good := checkZKFaultRun(t, tc.nemesis, r, tc.wantF)
			if tc.detail == "" || len(good) == 0 {
				return
			}
			for _, op := range good {
				if strings.Contains(op.startEnd.Value.Detail, tc.detail) || strings.Contains(op.stopEnd.Value.Detail, tc.detail) {
					return
				}
			}
			t.Errorf("%s: no verified fault shows %q", tc.nemesis, tc.detail)
		})
	}
}

// startZKRun starts `chaos run` in the background and waits until the
// history's last nemesis event is a verified start of f (the fault is in
// effect now). It returns the command and the run folder.
func startZKRun(t *testing.T, f string, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	results := t.TempDir()
	cmd, _, se := chaostest.Start(t, append([]string{"run", "--results", results}, args...)...)
	dir := chaostest.WaitForRun(t, results, se, "verified "+f, func(d string) bool { return zkLastNemesisIs(d, f) })
	return cmd, dir, se
}

func zkLastNemesisIs(dir, f string) bool {
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return false
	}
	for i := len(h.Events) - 1; i >= 0; i-- {
		e := h.Events[i]
		if e.Process == history.Nemesis {
			return e.F == f && e.Type == history.OK && zkVerified(&e)
		}
	}
	return false
}

// zkSlotNamespaces lists the namespaces of the run's slot.
func zkSlotNamespaces(t *testing.T, runID string) []string {
	t.Helper()
	slots, err := netns.Slots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.RunID == runID {
			return s.Namespaces
		}
	}
	return nil
}

// zkRulesIn counts the DROP rules in a namespace's partition chain.
func zkRulesIn(ns string) int {
	out, _ := exec.Command("ip", "netns", "exec", ns, "iptables", "-w", "-S", "ZKCHAOS").Output()
	return strings.Count(string(out), "-j DROP")
}

// TestKilledControllerMidZKFault SIGKILLs the controller while a partition
// is in effect, and while a server is paused: 2 seconds later nothing of
// the run may remain (no process, none stopped, no namespace, so no rule).
func TestKilledControllerMidZKFault(t *testing.T) {
	for _, tc := range []struct{ nemesis, f string }{
		{"partition-zk-leader", history.FPartition},
		{"pause-zk", history.FPause},
	} {
		t.Run(tc.nemesis, func(t *testing.T) {
			zkNeedNetns(t)
			cmd, dir, _ := startZKRun(t, tc.f, "--name", "killed", "--nemesis", tc.nemesis, "--nemesis-interval", "1s",
				"--pause", "60s", "--time-limit", "5m", "--seed", "9")
			runID := chaostest.ReadTest(t, dir).RunID
			tagged, _ := proc.FindTagged(runID)
			stopped, rules := 0, 0
			for _, p := range tagged {
				if proc.Stopped(p.PID) {
					stopped++
				}
			}
			for _, ns := range zkSlotNamespaces(t, runID) {
				rules += zkRulesIn(ns)
			}
			t.Logf("killing controller with %d processes, %d stopped, %d DROP rules", len(tagged), stopped, rules)
			if tc.f == history.FPause && stopped == 0 {
				t.Fatalf("history says a server is paused but no process of the run is stopped")
			}
			if tc.f == history.FPartition && rules == 0 {
				t.Fatalf("history says a partition is in effect but no namespace of the run has rules")
			}
			chaostest.Crash(t, cmd)
			time.Sleep(2 * time.Second)
			chaostest.AssertNothingLeft(t, dir)
			if nss := zkSlotNamespaces(t, runID); len(nss) > 0 {
				t.Errorf("namespaces left: %v", nss)
			}
		})
	}
}

// TestCleanupAfterControllerAndJanitorDie kills both the controller and
// its janitor mid-fault (a paused server), so only chaos cleanup can
// remove what is left; a second cleanup must find nothing of the run.
func TestCleanupAfterControllerAndJanitorDie(t *testing.T) {
	zkNeedNetns(t)
	cmd, dir, _ := startZKRun(t, history.FPause, "--name", "orphan", "--nemesis", "pause-zk", "--nemesis-interval", "1s",
		"--pause", "60s", "--time-limit", "5m", "--seed", "10")
	runID := chaostest.ReadTest(t, dir).RunID
	jan := chaostest.JanitorPID(runID)
	if jan == 0 {
		t.Fatal("janitor of the run not found")
	}
	_ = syscall.Kill(jan, syscall.SIGKILL)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(500 * time.Millisecond)
	tagged, _ := proc.FindTagged(runID)
	if len(tagged) == 0 || len(zkSlotNamespaces(t, runID)) == 0 {
		t.Fatalf("nothing left to clean up (%d processes): the janitor was not really dead?", len(tagged))
	}
	for i, want := range []bool{true, false} {
		out, err := exec.Command(chaostest.Binary(t), "cleanup").CombinedOutput()
		if err != nil {
			t.Fatalf("chaos cleanup #%d: %v\n%s", i+1, err, out)
		}
		t.Logf("chaos cleanup #%d:\n%s", i+1, out)
		if got := strings.Contains(string(out), runID); got != want {
			t.Errorf("chaos cleanup #%d mentions run %s: %v, want %v", i+1, runID, got, want)
		}
		chaostest.AssertNothingLeft(t, dir)
	}
}
