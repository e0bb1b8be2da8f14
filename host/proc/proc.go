// Package proc finds, pauses, resumes and kills the OS processes of a run.
//
// Every process a run starts (servers, register, workers) carries a tag in
// its environment: the run id and the run's owners (the controller's and
// the janitor's PID and start time). That tag is what lets the janitor and
// chaos cleanup find every process of a run from /proc alone, however the
// controller died and whatever it failed to record, and tell a leftover
// (both owners gone) from a run in progress.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment variables that tag a run's processes.
const (
	EnvRun = "ZKCHAOS_RUN"
	// EnvController is the controller's PID alone, as versions before
	// EnvOwners read it.
	EnvController = "ZKCHAOS_CONTROLLER"
	EnvOwners     = "ZKCHAOS_OWNERS"
)

// Env returns the tag to add to the environment of every process a run
// starts.
func Env(runID string, o Owners) []string {
	return []string{EnvRun + "=" + runID, EnvController + "=" + strconv.Itoa(o.Controller.PID), EnvOwners + "=" + o.String()}
}

// Tagged is a process found by its tag.
type Tagged struct {
	PID    int
	Run    string
	Owners Owners
}

// FindTagged lists the processes carrying a run tag. With run != "" only
// that run's. The calling process is never listed.
func FindTagged(run string) ([]Tagged, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	self := os.Getpid()
	var out []Tagged
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		t := Tagged{PID: pid}
		controller := 0
		for _, kv := range bytes.Split(env, []byte{0}) {
			s := string(kv)
			if v, ok := strings.CutPrefix(s, EnvRun+"="); ok {
				t.Run = v
			} else if v, ok := strings.CutPrefix(s, EnvOwners+"="); ok {
				t.Owners = ParseOwners(v)
			} else if v, ok := strings.CutPrefix(s, EnvController+"="); ok {
				controller, _ = strconv.Atoi(v)
			}
		}
		if t.Owners.Controller.PID == 0 {
			t.Owners.Controller.PID = controller // a tag before EnvOwners
		}
		if t.Run == "" || (run != "" && t.Run != run) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// State returns the state letter of /proc/PID/stat ('R', 'S', 'T' for
// stopped, 'Z', ...).
func State(pid int) (byte, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, fmt.Errorf("read state of pid %d: %w", pid, err)
	}
	return f[0][0], nil
}

// StartTime returns when pid started, in clock ticks after boot (field 22
// of /proc/PID/stat). With the PID it names one process for as long as the
// machine runs: a PID that is reused after its process died comes back
// with a later start time, so a record of (PID, start) can tell its
// process from the stranger that now has the number.
func StartTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, fmt.Errorf("read start time of pid %d: %w", pid, err)
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse start time in /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// Children returns the PIDs whose parent is pid (field 4 of
// /proc/PID/stat), in no particular order; a process that ends while
// they are read is left out.
func Children(pid int) ([]int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	parent := strconv.Itoa(pid)
	var kids []int
	for _, d := range dirs {
		child, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if f, err := statFields(child); err == nil && len(f) > 1 && f[1] == parent {
			kids = append(kids, child)
		}
	}
	return kids, nil
}

// statFields are the fields of /proc/PID/stat from the third (the state)
// on: they follow the command name, which is in parentheses and may
// contain spaces.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) == 0 || f[0] == "" {
		return nil, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return f, nil
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	s, err := State(pid)
	return err == nil && s != 'Z' && s != 'X'
}

// Stopped reports whether pid is stopped by a signal.
func Stopped(pid int) bool {
	s, err := State(pid)
	return err == nil && (s == 'T' || s == 't')
}

// Pause sends SIGSTOP and waits until the kernel shows the process stopped,
// so that a pause recorded in the history really happened; it gives up
// after timeout.
func Pause(pid int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return PauseContext(ctx, pid)
}

// PauseContext is Pause bounded by ctx instead of a timeout: the nemesis
// gives every injection one deadline, and a wait that outlived it would
// hang the schedule.
func PauseContext(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP pid %d: %w", pid, err)
	}
	return waitFor(ctx, pid, Stopped, "stopped")
}

// Resume sends SIGCONT and waits until the process no longer shows
// stopped; it gives up after timeout.
func Resume(pid int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return ResumeContext(ctx, pid)
}

// ResumeContext is Resume bounded by ctx: an undo must end by its
// deadline even when the process never shows running (a process stopped
// by a tracer stays stopped after SIGCONT).
func ResumeContext(ctx context.Context, pid int) error {
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil // gone: nothing left paused
		}
		return fmt.Errorf("SIGCONT pid %d: %w", pid, err)
	}
	return waitFor(ctx, pid, func(p int) bool { return !Stopped(p) }, "running")
}

// waitFor polls the process until cond holds, it exits, or ctx ends.
func waitFor(ctx context.Context, pid int, cond func(int) bool, what string) error {
	start := time.Now()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond(pid) {
			return nil
		}
		if !Alive(pid) {
			return fmt.Errorf("pid %d exited while waiting for it to be %s", pid, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pid %d not %s after %s: %w", pid, what, time.Since(start).Round(time.Millisecond), context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// KillAll resumes then SIGKILLs every listed process: a stopped process
// dies from SIGKILL too, but resuming first means nothing stays stopped if
// the kill is refused.
func KillAll(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// SweepRun resumes and kills every process tagged with run, and waits (up
// to timeout) until they are gone. It returns the PIDs it killed.
func SweepRun(run string, timeout time.Duration) ([]int, error) {
	ts, err := FindTagged(run)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(ts))
	for _, t := range ts {
		pids = append(pids, t.PID)
	}
	if err := KillAndWait(pids, timeout); err != nil {
		return pids, fmt.Errorf("run %s: %w", run, err)
	}
	return pids, nil
}

// KillAndWait resumes and kills pids (KillAll) and waits, up to timeout,
// until they are gone.
func KillAndWait(pids []int, timeout time.Duration) error {
	KillAll(pids)
	deadline := time.Now().Add(timeout)
	for _, p := range pids {
		for Alive(p) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if Alive(p) {
			return fmt.Errorf("pid %d still alive after SIGKILL", p)
		}
	}
	return nil
}
