package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/zkchaos/zkchaos/history"
)

func init() { register("pause-worker", func() Fault { return pauseWorker{} }) }

// pauseWorker SIGSTOPs a random live worker, holder or not: a GC pause can
// hit a client that is waiting in the queue or thinking just as well as
// the holder, and the recipe must survive coming back to a world that
// moved on (its queue node gone with its session, a watch that will never
// fire).
//
// It uses gopsutil rather than proc's /proc/PID/stat reading for two
// things proc does not do: proving the PID is still our worker before
// signalling it (command line names the logical process, and the process
// start time is remembered so the SIGCONT cannot hit a recycled PID), and
// reading the state from /proc/PID/status, a second kernel view next to
// the one pause-holder uses.
type pauseWorker struct{}

func (pauseWorker) Verbs() (string, string) { return history.FPause, history.FResume }

func (pauseWorker) Inject(ctx context.Context, env *Env) (*Effect, error) {
	ws, err := workersOf(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	anyWorker := func(Worker) bool { return true }
	w, ok := waitWorker(ctx, env, ws, holderWait, 0, anyWorker, anyWorker)
	if !ok {
		return nil, ErrNoTarget
	}
	target := fmt.Sprintf("process %d (pid %d)", w.Process, w.PID)
	if w.Holding {
		target += fmt.Sprintf(" holding %s with token %d", w.Key, w.Token)
	} else {
		target += " holding nothing"
	}
	v := history.Value{PID: w.PID, Target: target, TargetProcess: history.Int(w.Process)}
	if w.Session != 0 {
		v.Session = sessionHex(w.Session)
	}
	p, created, err := ourWorker(ctx, w)
	if err != nil {
		return nil, withTarget(v, fmt.Errorf("%w: %w", ErrNoTarget, err))
	}
	eff := &Effect{Value: v, Undo: func(ctx context.Context) (history.Value, error) { return resumeWorker(ctx, w.PID, created, v) }}
	start := time.Now()
	if err := p.SuspendWithContext(ctx); err != nil {
		if errors.Is(err, process.ErrorProcessNotRunning) {
			return nil, withTarget(v, fmt.Errorf("%w: pid %d exited before the pause", ErrNoTarget, w.PID))
		}
		return eff, fmt.Errorf("SIGSTOP pid %d: %w", w.PID, err)
	}
	env.watchSession(watchSpec{Process: w.Process, PID: w.PID, Session: w.Session})
	if err := waitStatus(ctx, p, true); err != nil {
		return eff, err
	}
	eff.Value.Detail = fmt.Sprintf("SIGSTOP; /proc/%d/status shows stopped after %s (gopsutil); command line names process %d, started at %d ms",
		w.PID, time.Since(start).Round(time.Microsecond), w.Process, created)
	return eff, nil
}

// ourWorker checks that pid is still the worker process of w (its command
// line carries --process N) and returns it with its start time.
func ourWorker(ctx context.Context, w Worker) (*process.Process, int64, error) {
	p, err := process.NewProcessWithContext(ctx, int32(w.PID))
	if err != nil {
		return nil, 0, fmt.Errorf("pid %d: %w", w.PID, err)
	}
	args, err := p.CmdlineSliceWithContext(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("command line of pid %d: %w", w.PID, err)
	}
	i := slices.Index(args, "--process")
	if i < 0 || i+1 >= len(args) || args[i+1] != strconv.Itoa(w.Process) {
		return nil, 0, fmt.Errorf("pid %d is not the worker of process %d: %q", w.PID, w.Process, args)
	}
	created, err := p.CreateTimeWithContext(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("start time of pid %d: %w", w.PID, err)
	}
	return p, created, nil
}

// resumeWorker SIGCONTs the paused worker unless its PID now belongs to
// another process, and verifies it no longer shows stopped.
func resumeWorker(ctx context.Context, pid int, created int64, v history.Value) (history.Value, error) {
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if errors.Is(err, process.ErrorProcessNotRunning) {
		v.Detail = "process gone: nothing left paused"
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("pid %d: %w", pid, err)
	}
	if ct, err := p.CreateTimeWithContext(ctx); err != nil || ct != created {
		v.Detail = "process gone (pid reused or exiting): nothing left paused"
		return v, nil
	}
	start := time.Now()
	if err := p.ResumeWithContext(ctx); err != nil {
		if errors.Is(err, process.ErrorProcessNotRunning) {
			v.Detail = "process gone: nothing left paused"
			return v, nil
		}
		return v, fmt.Errorf("SIGCONT pid %d: %w", pid, err)
	}
	if err := waitStatus(ctx, p, false); err != nil {
		return v, err
	}
	v.Detail = fmt.Sprintf("SIGCONT; /proc/%d/status no longer stopped after %s (gopsutil)", pid, time.Since(start).Round(time.Microsecond))
	return v, nil
}

// waitStatus polls the process state until it is (or is no longer)
// stopped, for up to verifyTimeout or until ctx ends. A process that
// vanishes while resuming counts as resumed.
func waitStatus(ctx context.Context, p *process.Process, stopped bool) error {
	deadline := time.Now().Add(verifyTimeout)
	for {
		st, err := p.StatusWithContext(ctx)
		if err != nil {
			if !stopped {
				return nil
			}
			return fmt.Errorf("state of pid %d: %w", p.Pid, err)
		}
		if slices.Contains(st, process.Stop) == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: state %v, want stopped=%v after %s", p.Pid, st, stopped, verifyTimeout)
		}
		if !sleep(ctx, 2*time.Millisecond) {
			return fmt.Errorf("pid %d: state %v, want stopped=%v: %w", p.Pid, st, stopped, context.Cause(ctx))
		}
	}
}
