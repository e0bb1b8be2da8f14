package janitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

// deadIdent names a process that has exited and been reaped.
func deadIdent(t *testing.T) proc.Ident {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return proc.Ident{PID: cmd.Process.Pid, Start: 1}
}

// startTagged starts a real process tagged with run and owners (nil env:
// a process that stands for a janitor, untagged); it is killed and reaped
// when the test ends. The channel closes when it has exited.
func startTagged(t *testing.T, env []string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd, done
}

func exited(done <-chan struct{}, within time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// TestCleanupJudgesControllerAndJanitor: a sweep of dead runs (chaos
// cleanup, and every run's start) kills a tagged process only when its
// controller and its janitor are both gone, a controller known by PID
// and start time (a reused PID is not the controller). A process whose
// controller died while its janitor still runs is the janitor's, and one
// of a live controller that carries a dead run's id (chaos check's
// PostgreSQL on a killed run's data) is not the dead run's.
func TestCleanupJudgesControllerAndJanitor(t *testing.T) {
	jan, _ := startTagged(t, nil)
	janitor := proc.IdentOf(jan.Process.Pid)
	me := proc.Self()
	reused := proc.Owners{Controller: proc.Ident{PID: me.Controller.PID, Start: me.Controller.Start + 1}}
	dead := fmt.Sprintf("janitor-test-dead-%d", os.Getpid())
	cases := []struct {
		name   string
		run    string
		owners proc.Owners
		killed bool
	}{
		{"controller dead, janitor sweeping", fmt.Sprintf("janitor-test-sweeping-%d", os.Getpid()),
			proc.Owners{Controller: deadIdent(t), Janitor: janitor}, false},
		{"controller and janitor dead", dead, proc.Owners{Controller: deadIdent(t), Janitor: deadIdent(t)}, true},
		{"the dead run's id, a live controller", dead, me, false},
		{"controller's PID reused, no janitor", fmt.Sprintf("janitor-test-reused-%d", os.Getpid()), reused, true},
	}
	done := make([]<-chan struct{}, len(cases))
	for i, c := range cases {
		_, done[i] = startTagged(t, proc.Env(c.run, c.owners))
	}
	report, err := Cleanup(context.Background(), false)
	if err != nil {
		t.Logf("cleanup: %v (another run's leftover?)", err)
	}
	for i, c := range cases {
		// Cleanup has waited for what it killed: only the reaping is
		// left, for a process killed as for one wrongly killed.
		if got := exited(done[i], 500*time.Millisecond); got != c.killed {
			t.Errorf("%s: killed %v, want %v (report %q)", c.name, got, c.killed, report)
		}
	}
}

// TestCleanupLeavesASlotToItsJanitor: a network slot whose controller
// died is left alone while its janitor runs, and removed by the next
// sweep once the janitor is gone too.
func TestCleanupLeavesASlotToItsJanitor(t *testing.T) {
	if os.Geteuid() != 0 || netns.Available() != nil {
		t.Skip("needs root with ip and iptables: network slots")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jan, janDone := startTagged(t, nil)
	run := fmt.Sprintf("janitor-test-slot-%d", os.Getpid())
	n, err := netns.Create(ctx, run, proc.Owners{Controller: deadIdent(t), Janitor: proc.IdentOf(jan.Process.Pid)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = netns.SweepSlot(context.Background(), n.Slot, netns.OwnedBy(run)) })
	mentions := func(report []string) bool {
		for _, l := range report {
			if strings.Contains(l, fmt.Sprintf("network slot %d (run %s)", n.Slot, run)) {
				return true
			}
		}
		return false
	}
	report, _ := Cleanup(ctx, false)
	if mentions(report) {
		t.Fatalf("a slot whose janitor runs was swept: %q", report)
	}
	if got, _ := readOwner(n.Slot); got != run {
		t.Fatalf("slot %d names %q after the sweep, want %q", n.Slot, got, run)
	}
	_ = jan.Process.Kill()
	<-janDone
	// Every run's start sweeps too: one of another test package may take
	// the slot first, but after Cleanup it must be gone.
	report, err = Cleanup(ctx, false)
	if got, _ := readOwner(n.Slot); got == run {
		t.Fatalf("the slot of a run whose controller and janitor are gone was not swept: %q, %v", report, err)
	}
	if !mentions(report) {
		t.Logf("slot %d swept by another run's start first", n.Slot)
	}
}

// readOwner is the run slot s's file names ("" without one).
func readOwner(s int) (string, error) {
	slots, err := netns.Slots()
	for _, i := range slots {
		if i.Slot == s {
			return i.RunID, err
		}
	}
	return "", err
}
