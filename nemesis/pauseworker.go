package nemesis

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/history"
)

func init() {
	register("pause-worker", func() Fault { return pauseWorker{} })
	selects("pause-worker", "any live worker, holder or not")
}

// pauseWorker SIGSTOPs a random live worker, holder or not: a GC pause can
// hit a client that is waiting in the queue or thinking just as well as
// the holder, and the recipe must survive coming back to a world that
// moved on (its queue node gone with its session, a watch that will never
// fire).
type pauseWorker struct{}

func (pauseWorker) Verbs() (string, string) { return history.FPause, history.FResume }

func (pauseWorker) Inject(ctx context.Context, env *Env) (*Effect, error) {
	ws, err := workersOf(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	pausable := func(w Worker) bool { return w.Proc != nil }
	w, ok := waitWorker(ctx, env, ws, holderWait, 0, pausable, pausable)
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
	return pauseProc(ctx, env, w.Proc, watchSpec{Process: w.Process, PID: w.PID, Session: w.Session}, v)
}
