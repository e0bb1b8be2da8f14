package core

// A controller SIGKILLed in the middle of a fault (an isolated holder, a
// partitioned or paused server) leaves nothing once its janitor has swept,
// and one whose janitor died too leaves what chaos cleanup removes. (The
// killed run of a paused holder is in run_test.go.)

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// sweepBound is how long a janitor may take to sweep a run whose
// controller was killed. It typically takes under 2 s; the bound is
// generous so that a loaded machine (other test packages beside this
// one) costs time, not a failure: what these tests prove is that
// nothing of the run stays.
const sweepBound = 20 * time.Second

// isolatedNS is the namespace of the isolation in effect right now, from
// the history ("" when the last nemesis event is not a completed isolate).
func isolatedNS(dir string) string {
	e := chaostest.LastNemesis(dir)
	if e == nil || e.F != history.FIsolate || e.Type != history.OK || e.Value == nil {
		return ""
	}
	if m := regexp.MustCompile(`namespace (zkc\S+)`).FindStringSubmatch(e.Value.Target); m != nil {
		return m[1]
	}
	return ""
}

// TestKilledControllerDuringIsolation SIGKILLs the controller while a
// holder is cut off: soon after (sweepBound) no rule, namespace or process of the run
// may remain (the janitor sweeps the namespaces, and the rules with them).
func TestKilledControllerDuringIsolation(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	chaostest.NeedRoot(t)
	results := t.TempDir()
	cmd, _, se := chaostest.Start(t, "run", "--results", results, "--name", "killed-isolate", "--fencing", "on",
		"--nemesis", "isolate-holder", "--time-limit", "5m", "--nemesis-interval", "1s", "--pause", "30s", "--seed", "16")
	var ns string
	dir := chaostest.WaitForRun(t, results, se, "verified isolation", func(d string) bool {
		ns = isolatedNS(d)
		return ns != ""
	})
	out, err := exec.Command("ip", "netns", "exec", ns, "iptables", "-w", "-S", "ZKCHAOS").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "DROP") {
		t.Fatalf("history says %s is isolated but its chain shows no DROP (%v): %s", ns, err, out)
	}
	t.Logf("killing controller pid %d while %s is isolated: %s", cmd.Process.Pid, ns, strings.TrimSpace(string(out)))
	chaostest.Crash(t, cmd)
	chaostest.AwaitNothingLeft(t, dir, sweepBound)
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
		t.Errorf("namespace %s (with its rules) still exists %s after the controller died", ns, sweepBound)
	}
}

// startUntilFault starts `chaos run` in the background and waits until the
// history's last nemesis event is a verified start of f (the fault is in
// effect now). It returns the command and the run folder.
func startUntilFault(t *testing.T, f string, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	results := t.TempDir()
	cmd, _, se := chaostest.Start(t, append([]string{"run", "--results", results}, args...)...)
	dir := chaostest.WaitForRun(t, results, se, "verified "+f, func(d string) bool { return faultNow(d, f) })
	return cmd, dir, se
}

// faultNow reports whether the history's last nemesis event is a verified
// start of f.
func faultNow(dir, f string) bool {
	e := chaostest.LastNemesis(dir)
	return e != nil && e.F == f && e.Type == history.OK && chaostest.Verified(e)
}

// slotNamespaces lists the namespaces of the run's slot.
func slotNamespaces(t *testing.T, runID string) []string {
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

// dropRulesIn counts the DROP rules in a namespace's partition chain.
func dropRulesIn(ns string) int {
	out, _ := exec.Command("ip", "netns", "exec", ns, "iptables", "-w", "-S", "ZKCHAOS").Output()
	return strings.Count(string(out), "-j DROP")
}

// TestKilledControllerMidZKFault SIGKILLs the controller while a partition
// is in effect, and while a server is paused: soon after (sweepBound) nothing of
// the run may remain (no process, none stopped, no namespace, so no rule).
func TestKilledControllerMidZKFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ nemesis, f string }{
		{"partition-zk-leader", history.FPartition},
		{"pause-zk", history.FPause},
	} {
		t.Run(tc.nemesis, func(t *testing.T) {
			chaostest.NeedNetns(t)
			cmd, dir, _ := startUntilFault(t, tc.f, "--name", "killed", "--nemesis", tc.nemesis, "--nemesis-interval", "1s",
				"--pause", "60s", "--time-limit", "5m", "--seed", "9")
			runID := chaostest.ReadTest(t, dir).RunID
			tagged, _ := proc.FindTagged(runID)
			stopped, rules := 0, 0
			for _, p := range tagged {
				if proc.Stopped(p.PID) {
					stopped++
				}
			}
			for _, ns := range slotNamespaces(t, runID) {
				rules += dropRulesIn(ns)
			}
			t.Logf("killing controller with %d processes, %d stopped, %d DROP rules", len(tagged), stopped, rules)
			if tc.f == history.FPause && stopped == 0 {
				t.Fatalf("history says a server is paused but no process of the run is stopped")
			}
			if tc.f == history.FPartition && rules == 0 {
				t.Fatalf("history says a partition is in effect but no namespace of the run has rules")
			}
			chaostest.Crash(t, cmd)
			chaostest.AwaitNothingLeft(t, dir, sweepBound)
			if nss := slotNamespaces(t, runID); len(nss) > 0 {
				t.Errorf("namespaces left: %v", nss)
			}
		})
	}
}

// TestCleanupAfterControllerAndJanitorDie kills both the controller and
// its janitor mid-fault (a paused server), so only chaos cleanup can
// remove what is left; a second cleanup must find nothing of the run.
func TestCleanupAfterControllerAndJanitorDie(t *testing.T) {
	t.Parallel()
	chaostest.NeedNetns(t)
	cmd, dir, _ := startUntilFault(t, history.FPause, "--name", "orphan", "--nemesis", "pause-zk", "--nemesis-interval", "1s",
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
	if len(tagged) == 0 || len(slotNamespaces(t, runID)) == 0 {
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
