package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSleeper starts a real process carrying a run tag.
func startSleeper(t *testing.T, run string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), Env(run, Self())...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd
}

func TestPauseResumeVerified(t *testing.T) {
	cmd := startSleeper(t, "proc-test-pause")
	pid := cmd.Process.Pid
	if err := Pause(pid, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if !Stopped(pid) {
		t.Fatalf("pid %d not stopped after Pause", pid)
	}
	if err := Resume(pid, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if Stopped(pid) {
		t.Fatalf("pid %d still stopped after Resume", pid)
	}
}

func TestResumeOfGoneProcessIsNotAnError(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := Resume(cmd.Process.Pid, time.Second); err != nil {
		t.Fatalf("resume of an exited process: %v", err)
	}
}

func TestPauseOfGoneProcessFails(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := Pause(cmd.Process.Pid, time.Second); err == nil {
		t.Fatal("pause of an exited process succeeded")
	}
}

func TestFindTaggedAndSweep(t *testing.T) {
	mine := startSleeper(t, "proc-test-sweep")
	other := startSleeper(t, "proc-test-other")
	if err := Pause(mine.Process.Pid, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ts, err := FindTagged("proc-test-sweep")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, x := range ts {
		pids = append(pids, x.PID)
		if x.Owners != Self() {
			t.Errorf("owners tag %v, want %v", x.Owners, Self())
		}
	}
	if !slices.Contains(pids, mine.Process.Pid) || slices.Contains(pids, other.Process.Pid) {
		t.Fatalf("FindTagged = %v; want %d and not %d", pids, mine.Process.Pid, other.Process.Pid)
	}
	killed, err := SweepRun("proc-test-sweep", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(killed, mine.Process.Pid) {
		t.Errorf("SweepRun killed %v, not %d", killed, mine.Process.Pid)
	}
	if Alive(mine.Process.Pid) {
		t.Errorf("paused tagged process survived the sweep")
	}
	if !Alive(other.Process.Pid) {
		t.Errorf("the sweep killed another run's process")
	}
}

func TestStartTimeNamesOneProcess(t *testing.T) {
	a := startSleeper(t, "proc-test-start")
	st, err := StartTime(a.Process.Pid)
	if err != nil || st == 0 {
		t.Fatalf("StartTime(%d) = %d, %v", a.Process.Pid, st, err)
	}
	again, err := StartTime(a.Process.Pid)
	if err != nil || again != st {
		t.Errorf("StartTime changed: %d then %d (%v)", st, again, err)
	}
	self, err := StartTime(os.Getpid())
	if err != nil || self > st {
		t.Errorf("our start %d (%v) is after our child's %d", self, err, st)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := StartTime(cmd.Process.Pid); err == nil {
		t.Error("StartTime of an exited process succeeded")
	}
}

// TestChildren: a process started by this one is among its children,
// and this process is not among its own.
func TestChildren(t *testing.T) {
	a := startSleeper(t, "proc-test-children")
	kids, err := Children(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kids, a.Process.Pid) || slices.Contains(kids, os.Getpid()) {
		t.Errorf("Children(%d) = %v, want %d among them and not %d", os.Getpid(), kids, a.Process.Pid, os.Getpid())
	}
}

// TestResumeContextEndsWithItsContext: a process in a tracing stop stays
// stopped after SIGCONT, the case where an unbounded resume polled
// forever. The resume must give up when its context ends, and say so.
func TestResumeContextEndsWithItsContext(t *testing.T) {
	runtime.LockOSThread() // the tracer is the thread that forked
	defer runtime.UnlockOSThread()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The traced child stops at its exec.
	deadline := time.Now().Add(5 * time.Second)
	for !Stopped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("traced pid %d never stopped", pid)
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := ResumeContext(ctx, pid)
	took := time.Since(start)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not running after") {
		t.Fatalf("ResumeContext of a traced process = %v; want a deadline error", err)
	}
	if took > 3*time.Second {
		t.Fatalf("ResumeContext returned after %s, long after its 300ms context", took)
	}
}
