package core

// A controller SIGKILLed in the middle of a fault (an isolated holder, a
// partitioned or paused server) leaves nothing once its janitor has swept,
// one whose janitor died too leaves what chaos cleanup removes, and a run
// killed whole (every process at once) is swept by the next run's start.
// (The killed run of a paused holder is in run_test.go.)

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/internal/testkit/dockertest"
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
// its janitor mid-fault (a paused server), so only chaos cleanup (or the
// start of another run) can remove what is left; a second cleanup must
// find nothing of the run.
func TestCleanupAfterControllerAndJanitorDie(t *testing.T) {
	t.Parallel()
	chaostest.NeedNetns(t)
	// Every run's start sweeps dead runs too: a run of another test
	// package that starts between the kill and chaos cleanup takes the
	// leftovers first, and the round proves nothing about cleanup.
	for round := 1; round <= 3; round++ {
		if cleanupAfterDeath(t, round) {
			return
		}
		t.Logf("round %d: another run's start swept the dead run before chaos cleanup did; again", round)
	}
	t.Fatal("another run's start swept the dead run before chaos cleanup in every round")
}

// cleanupAfterDeath is one round of TestCleanupAfterControllerAndJanitorDie;
// false when something else swept the run before chaos cleanup.
func cleanupAfterDeath(t *testing.T, round int) bool {
	t.Helper()
	cmd, dir, _ := startUntilFault(t, history.FPause, "--name", "orphan", "--nemesis", "pause-zk", "--nemesis-interval", "1s",
		"--pause", "60s", "--time-limit", "5m", "--seed", strconv.Itoa(9+round))
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
		if proc.Alive(jan) {
			t.Fatalf("the janitor %d is not dead", jan)
		}
		return false
	}
	for i, want := range []bool{true, false} {
		out, err := exec.Command(chaostest.Binary(t), "cleanup").CombinedOutput()
		if err != nil {
			t.Fatalf("chaos cleanup #%d: %v\n%s", i+1, err, out)
		}
		t.Logf("chaos cleanup #%d:\n%s", i+1, out)
		got := strings.Contains(string(out), runID)
		if i == 0 && !got && nothingLeft(runID) {
			return false
		}
		if got != want {
			t.Errorf("chaos cleanup #%d mentions run %s: %v, want %v", i+1, runID, got, want)
		}
		chaostest.AssertNothingLeft(t, dir)
	}
	return true
}

// nothingLeft reports whether no process or slot of run runID exists.
func nothingLeft(runID string) bool {
	tagged, _ := proc.FindTagged(runID)
	slots, _ := netns.Slots()
	for _, s := range slots {
		if s.RunID == runID {
			return false
		}
	}
	return len(tagged) == 0
}

// TestWholeTreeKillIsSweptByTheNextRun: a CI timeout or a cgroup kill
// ends a run's whole process tree at once: the controller, its janitor
// (in a session of its own), the workers, the register and the JVMs (each
// in a process group of its own). Nobody is left to clean up, so the next
// run's start does: within 5 s of it nothing of the dead run may be left
// (no process, slot file, namespace, bridge or FORWARD rule), and a run
// in progress beside it is untouched: it finishes valid.
func TestWholeTreeKillIsSweptByTheNextRun(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsembles(t, 2) // the victim and the live run, then the live run and the next
	chaostest.NeedNetns(t)
	light := []string{"--nodes", "1", "--nemesis", "none", "--workers", "2", "--keys", "1", "--recovery", "0s", "--progress", "off"}
	deadRes, liveRes, nextRes := t.TempDir(), t.TempDir(), t.TempDir()
	victim, _, seV := chaostest.Start(t, append([]string{"run", "--results", deadRes, "--name", "killed-whole",
		"--time-limit", "5m", "--seed", "21"}, light...)...)
	waitSlotClaim(t, deadRes, seV)
	live, _, seL := chaostest.Start(t, append([]string{"run", "--results", liveRes, "--name", "alive-beside",
		"--time-limit", "10s", "--seed", "22"}, light...)...)
	deadDir := chaostest.WaitForRun(t, deadRes, seV, "the workers of the run to kill at work", working)
	liveDir := chaostest.WaitForRun(t, liveRes, seL, "the workers of the live run at work", working)
	runID := chaostest.ReadTest(t, deadDir).RunID

	if chaostest.JanitorPID(runID) == 0 {
		t.Fatalf("janitor of run %s not found", runID)
	}
	if tagged, err := proc.FindTagged(runID); err != nil || len(tagged) == 0 {
		t.Fatalf("no process of run %s found (%v)", runID, err)
	}
	killed := chaostest.KillWholeRun(t, victim, runID)
	if len(slotNamespaces(t, runID)) == 0 {
		t.Fatalf("no namespace of run %s left after the kill: nothing to sweep", runID)
	}
	t.Logf("killed run %s whole: %d processes", runID, killed)

	next, _, seN := chaostest.Start(t, append([]string{"run", "--results", nextRes, "--name", "next",
		"--time-limit", "1s", "--seed", "23"}, light...)...)
	took := dockertest.WaitNoneLeft(t, deadDir, 30*time.Second)
	if !working(liveDir) {
		t.Errorf("the live run was no longer in its workload when the sweep ended: it proves nothing")
	}
	chaostest.AssertNothingLeft(t, deadDir)
	t.Logf("nothing of the dead run left %s after the next run started", took.Round(10*time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("the dead run was swept %s after the next run started, want at most 5 s", took.Round(10*time.Millisecond))
	}

	for _, r := range []struct {
		name string
		cmd  *exec.Cmd
		se   *bytes.Buffer
	}{{"live run", live, seL}, {"next run", next, seN}} {
		if code := chaostest.ExitOf(r.cmd.Wait()); code != 0 {
			t.Errorf("%s: exit %d, want 0 (valid)\n%s", r.name, code, chaostest.Tail(r.se.String(), 3000))
		}
	}
	chaostest.AssertNothingLeft(t, liveDir)
	nextDir := chaostest.LatestRun(nextRes)
	chaostest.AssertNothingLeft(t, nextDir)
	log, _ := os.ReadFile(filepath.Join(nextDir, store.LogFile))
	swept := ""
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "run "+runID) || strings.Contains(l, "dead runs swept") || strings.Contains(l, "run starting") {
			swept += l + "\n"
		}
	}
	if swept == "" {
		// Every run's start sweeps: another test package's run may have
		// started in between and swept it first.
		t.Logf("the next run's log does not name run %s: another run's start swept it", runID)
	}
	t.Logf("the next run's log:\n%s", swept)
}

// working reports whether the run in dir is in its workload phase and
// its workers have completed operations (they are all up).
func working(dir string) bool {
	st, err := store.ReadStatus(filepath.Join(dir, store.StatusFile))
	if err != nil || st.Phase != store.PhaseWorkload {
		return false
	}
	b, _ := os.ReadFile(filepath.Join(dir, store.HistoryFile))
	return bytes.Count(b, []byte(`"type":"ok"`)) >= 4
}
