package nemesis

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

func init() {
	register("pause-holder", func() Fault { return pauseHolder{} })
	selects("pause-holder", "a lock holder in its critical section (any holder after 1s)")
}

// pauseHolder models a stop-the-world GC pause of the lock holder: SIGSTOP
// the worker that holds a lock for longer than the session timeout, so
// ZooKeeper expires its session and grants the lock to another while the
// paused worker still believes it holds it; then SIGCONT, and the paused
// worker carries on with whatever it was doing.
type pauseHolder struct{}

// holderWait is how long pause-holder waits for a holder in its critical
// section before settling for any holder.
const holderWait = time.Second

func (pauseHolder) Verbs() (string, string) { return history.FPause, history.FResume }

func (pauseHolder) Inject(ctx context.Context, env *Env) (*Effect, error) {
	h, ok := waitHolder(ctx, env, holderWait)
	if !ok {
		return nil, ErrNoTarget
	}
	target := fmt.Sprintf("process %d (pid %d) holding %s with token %d", h.Process, h.PID, h.Key, h.Token)
	if h.InCriticalSection {
		target += ", in its critical section before its write"
	}
	v := history.Value{PID: h.PID, Target: target, TargetProcess: history.Int(h.Process)}
	session := sessionOf(env, h.PID)
	if session != 0 {
		v.Session = sessionHex(session)
	}
	if h.Proc == nil {
		return nil, withTarget(v, fmt.Errorf("%w: %w: the targets give no handle on the holder's process", ErrNoTarget, cluster.ErrUnsupported))
	}
	return pauseProc(ctx, env, h.Proc, watchSpec{Process: h.Process, PID: h.PID, Session: session}, v)
}

// pauseProc pauses p for the fault recorded as v and watches the session
// in spec while the pause is in effect; the Effect's Undo resumes p. A
// process gone before the pause is no target.
func pauseProc(ctx context.Context, env *Env, p WorkerProc, spec watchSpec, v history.Value) (*Effect, error) {
	verified, err := p.Pause(ctx)
	if workerGone(err) {
		return nil, withTarget(v, fmt.Errorf("%w: %w", ErrNoTarget, err))
	}
	eff := &Effect{Value: v, Undo: resumeUndo(p, v)}
	// Even unverified, the SIGSTOP may have landed: watch the session.
	env.watchSession(spec)
	if err != nil {
		return eff, err
	}
	eff.Value.Detail = verified
	return eff, nil
}

// resumeUndo resumes p, paused for the fault recorded as v.
func resumeUndo(p WorkerProc, v history.Value) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		verified, err := p.Resume(ctx)
		if err != nil {
			return v, err
		}
		v.Detail = verified
		return v, nil
	}
}

// sessionOf is the session the worker with pid last reported connected, 0
// when unknown (the targets do not expose workers, or it has none).
func sessionOf(env *Env, pid int) int64 {
	ws, err := workersOf(env)
	if err != nil {
		return 0
	}
	for _, w := range ws.Workers() {
		if w.PID == pid {
			return w.Session
		}
	}
	return 0
}

// waitHolder polls for a holder, preferring one in its critical section
// past its lock check for up to prefer, then any holder, until ctx ends:
// with contention there is almost always one, and a fault skipped would
// be a silently weaker run. Past its check, because a holder paused before
// its write request reached it checks the lock after the resume, when its
// client has seen the connection die, and refuses the write: the pause
// shows nothing. Polled every 5 ms, a first fault at the start of the
// workload would otherwise often catch the first holder within a
// millisecond of its write's sending (1 of 20 runs measured).
func waitHolder(ctx context.Context, env *Env, prefer time.Duration) (Holder, bool) {
	deadline := time.Now().Add(prefer)
	for {
		hs := env.Targets.Holders()
		if time.Now().Before(deadline) {
			var in []Holder
			for _, h := range hs {
				if h.InCriticalSection && (h.CriticalSince.IsZero() || time.Since(h.CriticalSince) >= expireAfterCheck) {
					in = append(in, h)
				}
			}
			hs = in
		}
		if len(hs) > 0 {
			sort.Slice(hs, func(i, j int) bool { return hs[i].Process < hs[j].Process })
			return hs[env.Rand.IntN(len(hs))], true
		}
		if !ctxsleep.Sleep(ctx, 5*time.Millisecond) {
			return Holder{}, false
		}
	}
}
