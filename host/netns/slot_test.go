package netns

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/proc"
)

// deadPID is the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestSlotOwnerAlive(t *testing.T) {
	me, err := newOwner("alive-test", proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	reused := me
	reused.ControllerStart++ // our PID, another process's start: the PID was reused
	old := me
	old.ControllerStart = 0 // a slot file of a version without start times
	dead := SlotFile{RunID: "dead", ControllerPID: deadPID(t), ControllerStart: me.ControllerStart}
	sweeping := dead // its janitor still sweeps it
	sweeping.JanitorPID, sweeping.JanitorStart = me.ControllerPID, me.ControllerStart
	bothDead := dead
	bothDead.JanitorPID, bothDead.JanitorStart = deadPID(t), me.ControllerStart
	for _, c := range []struct {
		name string
		f    *SlotFile
		want bool
	}{
		{"the controller itself", &me, true},
		{"PID reused by another process", &reused, false},
		{"older slot file, PID alive", &old, true},
		{"controller exited", &dead, false},
		{"controller exited, janitor runs", &sweeping, true},
		{"controller and janitor exited", &bothDead, false},
		{"no PID (unparseable file)", &SlotFile{}, false},
		{"no slot file", nil, false},
	} {
		if got := c.f.Alive(); got != c.want {
			t.Errorf("%s: Alive() = %v, want %v", c.name, got, c.want)
		}
	}
	if !Abandoned(&reused) || !Abandoned(nil) || Abandoned(&me) || Abandoned(&sweeping) || !Abandoned(&bothDead) {
		t.Error("Abandoned must allow dead or unknown owners only")
	}
	if !OwnedBy("alive-test")(&me) || OwnedBy("other")(&me) || OwnedBy("")(&SlotFile{}) || OwnedBy("x")(nil) {
		t.Error("OwnedBy must allow only the run's own slot")
	}
}

// TestClaimSkipsLockedAndUsedSlots: a slot whose lock is held (a claim or
// a sweep in progress) or that still has anything of a dead run is never
// claimed; the dead run's own janitor (ReleaseRun) then removes it, and
// Close leaves a slot alone that names another run.
func TestClaimSkipsLockedAndUsedSlots(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := newNetwork(t)
	s := a.Slot
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Held lock: the slot is skipped, not waited for.
	unlock, ok, err := lockSlot(ctx, s, false)
	if err != nil || !ok {
		t.Skipf("slot %d taken by another process since: %v", s, err)
	}
	b := newNetwork(t)
	unlock()
	if b.Slot == s {
		t.Fatalf("slot %d claimed while its lock was held", s)
	}

	// A controller that died during its claim: the slot file names it
	// (dead) and its janitor (this test, alive: no other run's start
	// sweeps the slot first), and its bridge exists. Nobody claims the
	// slot; its run's janitor removes it.
	deadRun := fmt.Sprintf("died-in-claim-%d", os.Getpid())
	unlock, ok, err = lockSlot(ctx, s, false)
	if err != nil || !ok {
		t.Skipf("slot %d taken by another process since: %v", s, err)
	}
	if empty, err := slotEmpty(ctx, s); err != nil || !empty {
		unlock()
		t.Skipf("slot %d in use by another process since: %v", s, err)
	}
	janitor := proc.IdentOf(os.Getpid())
	err = writeSlotFile(s, SlotFile{RunID: deadRun, ControllerPID: deadPID(t), ControllerStart: 1,
		JanitorPID: janitor.PID, JanitorStart: janitor.Start})
	if err == nil {
		_, err = run(ctx, "ip", "link", "add", bridgeName(s), "type", "bridge")
	}
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = SweepSlot(context.Background(), s, OwnedBy(deadRun)) })
	c := newNetwork(t)
	if c.Slot == s {
		t.Fatalf("slot %d claimed over a dead run's bridge", s)
	}
	if swept, err := ReleaseRun(ctx, "not-"+deadRun); err != nil || len(swept) > 0 {
		t.Errorf("another run's janitor swept %v (%v)", swept, err)
	}
	swept, err := ReleaseRun(ctx, deadRun)
	if err != nil || len(swept) != 1 || swept[0] != s {
		t.Fatalf("the dead run's janitor swept %v (%v), want [%d]", swept, err, s)
	}
	assertGone(t, s)

	// A network whose slot file names another run (taken by cleanup --all
	// and claimed again) is not swept by its Close.
	if err := writeSlotFile(c.Slot, SlotFile{RunID: "thief", ControllerPID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err == nil {
		t.Error("Close swept a slot that names another run")
	}
	if !linkExists(t, c.Bridge) {
		t.Error("Close removed the bridge of a slot that names another run")
	}
	if err := writeSlotFile(c.Slot, c.owner); err != nil {
		t.Fatal(err)
	}
	if _, swept, err := SweepSlot(ctx, c.Slot, OwnedBy(c.RunID)); err != nil || !swept {
		t.Fatalf("sweep of our own slot: swept %v, %v", swept, err)
	}
}

// sweepAbandoned sweeps slot s by chaos cleanup's rule. Every run's start
// sweeps by that rule too, so a run of another test package may have
// swept the slot first: then it must be gone already.
func sweepAbandoned(t *testing.T, ctx context.Context, s int) {
	t.Helper()
	_, swept, err := SweepSlot(ctx, s, Abandoned)
	if err != nil {
		t.Fatalf("sweep of abandoned slot %d: %v", s, err)
	}
	if !swept {
		t.Logf("slot %d swept by another run's start first", s)
	}
	assertGone(t, s)
}

// TestSlotOwnerRecordsStartTime: the slot file of a new network names the
// controller by PID and start time.
func TestSlotOwnerRecordsStartTime(t *testing.T) {
	needRoot(t)
	n := newNetwork(t)
	f, err := readSlotFile(n.Slot)
	if err != nil || f == nil {
		t.Fatalf("slot file: %v, %v", f, err)
	}
	st, err := proc.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if f.RunID != n.RunID || f.ControllerPID != os.Getpid() || f.ControllerStart != st {
		t.Errorf("slot file %+v, want run %s pid %d start %d", f, n.RunID, os.Getpid(), st)
	}
}
