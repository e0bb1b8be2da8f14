package core

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/internal/testkit/racerepeat"
)

// TestRunDuringTeardownOfAnother is the race of
// run/janitor's TestFinishedJanitorSparesTheNextRun with real runs:
// run A finishes and releases its network slot; run B starts and takes
// the same slot; only then does A's janitor do its final sweep. B must
// finish without a harness failure, and A's janitor must leave B's slot
// alone. The window between A's release and its janitor's sweep is a few
// milliseconds; the test widens it by holding A's janitor stopped
// (SIGSTOP) from its start until B has claimed the slot: a slow janitor,
// not a different one.
func TestRunDuringTeardownOfAnother(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	chaostest.NeedRoot(t)
	if err := netns.Available(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
	raced := 0
	for round := range racerepeat.Count(t, 1) {
		// The slot is the lowest free one. Runs of other tests on the
		// machine may take it between A's release and B's claim (under a
		// second), or free a lower one: then B gets another slot, which
		// is no race. Try again, bounded: each try misses rarely.
		for try := 0; try < 6; try++ {
			if teardownRace(t, fmt.Sprintf("%d-%d", round, try)) {
				raced++
				break
			}
		}
	}
	if raced == 0 {
		t.Fatal("B never got A's slot: the race was not exercised")
	}
}

var raceRunArgs = []string{"--net", "netns", "--nemesis", "none", "--time-limit", "2s", "--recovery", "0s",
	"--workers", "2", "--keys", "1", "--seed", "11"}

// teardownRace runs A and B once; false when B got another slot than A.
func teardownRace(t *testing.T, tag string) bool {
	t.Helper()
	resA, resB := t.TempDir(), t.TempDir()
	a, _, seA := chaostest.Start(t, append([]string{"run", "--results", resA, "--name", "a" + tag}, raceRunArgs...)...)
	runA, slot := waitSlotClaim(t, resA, seA)
	jan := janitorOf(t, runA)
	if err := syscall.Kill(jan, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(jan, syscall.SIGCONT)
		}
	}
	defer resume()

	// A's own release: its slot file goes once its Close is done.
	waitFor(t, 90*time.Second, "A to release its slot", seA, func() bool {
		owner, _ := chaostest.SlotOwner(slot)
		return owner != runA
	})
	b, _, seB := chaostest.Start(t, append([]string{"run", "--results", resB, "--name", "b" + tag}, raceRunArgs...)...)
	runB, slotB := waitSlotClaim(t, resB, seB)
	resume() // A's janitor sweeps now, with B on the slot A had
	codeA := chaostest.ExitOf(a.Wait())
	codeB := chaostest.ExitOf(b.Wait())
	if slotB != slot {
		t.Logf("round %s: B took slot %d, A had %d: no race", tag, slotB, slot)
		chaostest.AssertRunLeftNothing(t, runA, slot)
		chaostest.AssertRunLeftNothing(t, runB, slotB)
		return false
	}
	if codeA != 0 {
		t.Errorf("run A: exit %d\n%s", codeA, chaostest.Tail(seA.String(), 3000))
	}
	if codeB != 0 || strings.Contains(seB.String(), "harness failure") {
		t.Errorf("run B on slot %d, swept by A's janitor: exit %d\n%s", slot, codeB, chaostest.Tail(seB.String(), 3000))
	}
	chaostest.AssertRunLeftNothing(t, runA, slot)
	chaostest.AssertRunLeftNothing(t, runB, slotB)
	return true
}

// waitSlotClaim waits until the run under results has claimed a network
// slot, and returns its run id and slot.
func waitSlotClaim(t *testing.T, results string, se *bytes.Buffer) (string, int) {
	t.Helper()
	var run string
	slot := -1
	waitFor(t, 60*time.Second, "a run to claim a slot", se, func() bool {
		if run == "" {
			dir, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
			if err != nil {
				return false
			}
			b, err := os.ReadFile(filepath.Join(dir, "controller.log"))
			if i := bytes.Index(b, []byte("run_id=")); err != nil || i < 0 {
				return false
			} else {
				run = string(bytes.Fields(b[i+len("run_id="):])[0])
			}
		}
		for s := 0; s < netns.MaxSlots; s++ {
			if owner, _ := chaostest.SlotOwner(s); owner == run {
				slot = s
				return true
			}
		}
		return false
	})
	return run, slot
}

// janitorOf waits for the janitor process of run.
func janitorOf(t *testing.T, run string) int {
	t.Helper()
	pid := 0
	waitFor(t, 10*time.Second, "the janitor of run "+run, nil, func() bool {
		pid = chaostest.JanitorPID(run)
		return pid != 0
	})
	return pid
}

func waitFor(t *testing.T, limit time.Duration, what string, se *bytes.Buffer, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			msg := ""
			if se != nil {
				msg = chaostest.Tail(se.String(), 3000)
			}
			t.Fatalf("no %s within %s\n%s", what, limit, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
