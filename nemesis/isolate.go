package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

func init() {
	register("isolate-holder", func() Fault { return isolateHolder{} })
	selects("isolate-holder", "a lock holder before or just after its lock check (any holder after 3s)")
	requireNetns("isolate-holder")
}

// isolateHolder cuts the lock holder off from every ZooKeeper server while
// it still reaches the register: the partition in which a session expires
// behind the client's back. The client only notices a silent connection
// after its read timeout (two thirds of the session timeout in
// go-zookeeper), and learns of the expiry only once it can reach a server
// again; meanwhile it may act on a lock the ensemble gave to another.
type isolateHolder struct{}

// disconnectTimeout bounds the wait for the isolated worker to report the
// lost connection; go-zookeeper notices within its read timeout.
const disconnectTimeout = 10 * time.Second

// freshCheckAge is how recently a holder in its critical section must
// have been sent its write for isolate-holder to prefer it.
const freshCheckAge = 200 * time.Millisecond

// freshWait is how long isolate-holder waits for such a holder before
// settling for any: with long work times hand-overs are seconds apart.
const freshWait = 3 * time.Second

// reconnectWait bounds how long the heal waits to see how the worker came
// back (expired, or the same session reconnected), for the record only.
const reconnectWait = 3 * time.Second

// isolate-holder starts with history.FIsolate and ends with history.FHeal,
// as server partitions do.
func (isolateHolder) Verbs() (string, string) { return history.FIsolate, history.FHeal }

func (isolateHolder) Inject(ctx context.Context, env *Env) (*Effect, error) {
	ws, err := workersOf(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	ips, err := serverIPs(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	isolatable := func(w Worker) bool { return w.Holding && w.Proc != nil && w.Session != 0 }
	// The holder whose write can land after the expiry is the one that
	// has not yet checked the lock for it (it checks right after the cut,
	// still "connected") or has only just checked: either way its write
	// comes a whole work time later. A holder deep into its work writes
	// before the session can expire.
	freshCheck := func(w Worker) bool {
		return !w.InCriticalSection || time.Since(w.CriticalSince) < freshCheckAge
	}
	w, ok := waitWorker(ctx, env, ws, freshWait+time.Second, freshWait, freshCheck, isolatable)
	if !ok {
		return nil, ErrNoTarget
	}
	target := fmt.Sprintf("process %d holding %s with token %d, session %s, %s",
		w.Process, w.Key, w.Token, sessionHex(w.Session), w.Proc.Name())
	v := history.Value{PID: w.PID, Target: target, Session: sessionHex(w.Session), TargetProcess: history.Int(w.Process)}
	start := time.Now()
	verified, err := w.Proc.Isolate(ctx, ips...)
	if errors.Is(err, errors.ErrUnsupported) || workerGone(err) {
		// Nothing was cut: no namespace of its own (loopback mode), or
		// it went with its worker.
		return nil, withTarget(v, fmt.Errorf("%w: %w", ErrNoTarget, err))
	}
	// Even a partial cut can cost the session: watch it either way, and
	// let the Undo flush whatever rules are in.
	env.watchSession(watchSpec{Process: w.Process, PID: w.PID, Session: w.Session})
	eff := &Effect{Value: v, Undo: func(ctx context.Context) (history.Value, error) { return healWorker(ctx, ws, w, v) }}
	eff.Value.Detail = verified
	if err != nil {
		return eff, err
	}
	blocked := time.Since(start)
	st, after, seen := waitState(ctx, ws, w.PID, w.Session, disconnectTimeout, "disconnected", "expired")
	if !seen {
		eff.Value.Detail += fmt.Sprintf("; worker's last state %q", st)
		return eff, fmt.Errorf("worker pid %d did not report disconnected within %s", w.PID, disconnectTimeout)
	}
	eff.Value.Detail += fmt.Sprintf("; worker reported %s %s after the cut", st, (blocked + after).Round(time.Millisecond))
	return eff, nil
}

// healWorker heals the worker's network (verified by the WorkerProc) and
// records how the worker came back.
func healWorker(ctx context.Context, ws Workers, w Worker, v history.Value) (history.Value, error) {
	verified, err := w.Proc.Heal(ctx)
	if err != nil {
		return v, err
	}
	v.Detail = verified
	if !stillLive(ws, w.PID) {
		v.Detail += "; the worker is no longer live (retired while cut off: it will not reconnect)"
		return v, nil
	}
	st, after, seen := waitState(ctx, ws, w.PID, w.Session, reconnectWait, "expired", "connected")
	switch {
	case seen:
		v.Detail += fmt.Sprintf("; worker reported the session %s %s after the heal", st, after.Round(time.Millisecond))
	default:
		v.Detail += fmt.Sprintf("; worker's last state for the session %q %s after the heal", st, after.Round(time.Millisecond))
	}
	return v, nil
}

// stillLive reports whether pid is a live (not retired) worker.
func stillLive(ws Workers, pid int) bool {
	for _, w := range ws.Workers() {
		if w.PID == pid {
			return true
		}
	}
	return false
}
