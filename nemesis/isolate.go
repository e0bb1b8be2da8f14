package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/netns"
)

func init() {
	register("isolate-holder", func() Fault { return isolateHolder{} })
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
	isolatable := func(w Worker) bool { return w.Holding && w.Net != nil && w.Session != 0 }
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
		for _, cur := range ws.Workers() {
			if cur.Net == nil {
				return nil, fmt.Errorf("%w: %w: workers have no network namespace (loopback mode)", ErrNoTarget, cluster.ErrUnsupported)
			}
		}
		return nil, ErrNoTarget
	}
	target := fmt.Sprintf("process %d (pid %d) holding %s with token %d, session %s, namespace %s",
		w.Process, w.PID, w.Key, w.Token, sessionHex(w.Session), w.Net.Name())
	v := history.Value{PID: w.PID, Target: target, Session: sessionHex(w.Session), TargetProcess: history.Int(w.Process)}
	eff := &Effect{Value: v, Undo: func(ctx context.Context) (history.Value, error) { return healWorker(ctx, ws, w, v) }}
	start := time.Now()
	err = w.Net.Block(ctx, ips...)
	// Even a partial cut can cost the session: watch it either way.
	env.watchSession(watchSpec{Process: w.Process, PID: w.PID, Session: w.Session})
	if err != nil {
		// Some rules may be in: the Undo flushes them.
		return eff, fmt.Errorf("isolate %s: %w", w.Net.Name(), err)
	}
	blocked := time.Since(start)
	rules, err := w.Net.Rules(ctx)
	if err != nil {
		return eff, fmt.Errorf("list rules of %s: %w", w.Net.Name(), err)
	}
	eff.Value.Detail = fmt.Sprintf("DROP both directions to servers %s in namespace %s (%s): %s",
		strings.Join(ips, ", "), w.Net.Name(), blocked.Round(time.Millisecond), strings.Join(rules, "; "))
	for _, ip := range ips {
		if !hasDrop(rules, ip) {
			return eff, fmt.Errorf("namespace %s shows no DROP rule for %s", w.Net.Name(), ip)
		}
	}
	st, after, seen := waitState(ctx, ws, w.PID, w.Session, disconnectTimeout, "disconnected", "expired")
	if !seen {
		eff.Value.Detail += fmt.Sprintf("; worker's last state %q", st)
		return eff, fmt.Errorf("worker pid %d did not report disconnected within %s", w.PID, disconnectTimeout)
	}
	eff.Value.Detail += fmt.Sprintf("; worker reported %s %s after the cut", st, (blocked + after).Round(time.Millisecond))
	return eff, nil
}

// healWorker flushes the worker's blocks and verifies none is left. A
// namespace already removed (its worker exited) has no rules either.
func healWorker(ctx context.Context, ws Workers, w Worker, v history.Value) (history.Value, error) {
	start := time.Now()
	// The worker may exit while we heal (a retired worker finishes), and
	// removing its namespace SIGKILLs whatever runs in it, our iptables
	// included: retry until the flush works or the namespace is gone.
	var herr error
	for attempt := 0; attempt < healAttempts; attempt++ {
		if attempt > 0 && !sleep(ctx, 200*time.Millisecond) {
			break
		}
		if herr = w.Net.Heal(ctx); herr == nil {
			break
		}
		if _, lerr := w.Net.Rules(ctx); lerr != nil && netGone(ctx, lerr) {
			v.Detail = fmt.Sprintf("namespace %s gone with its worker: no rules left (%v)", w.Net.Name(), lerr)
			return v, nil
		}
	}
	if herr != nil {
		return v, fmt.Errorf("heal %s: %w", w.Net.Name(), herr)
	}
	rules, err := w.Net.Rules(ctx)
	if err != nil {
		if !netGone(ctx, err) {
			return v, fmt.Errorf("list rules of %s after the heal: %w", w.Net.Name(), err)
		}
		v.Detail = fmt.Sprintf("namespace %s gone with its worker: no rules left", w.Net.Name())
		return v, nil
	}
	if len(rules) > 0 {
		return v, fmt.Errorf("namespace %s still has rules after heal: %s", w.Net.Name(), strings.Join(rules, "; "))
	}
	v.Detail = fmt.Sprintf("flushed chain in namespace %s, no rule left (%s)", w.Net.Name(), time.Since(start).Round(time.Millisecond))
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

// healAttempts bounds the flush retries of a heal.
const healAttempts = 5

// netGone reads an error of WorkerNet.Rules: the namespace is gone with
// its worker, unless the error is iptables itself failing in a namespace
// that still exists (netns reports an iptables failure as a CmdError only
// then), or the heal's own time ran out. Taking a failure for "gone"
// would record a heal that left its rules in place as verified.
func netGone(ctx context.Context, err error) bool {
	var ce *netns.CmdError
	return ctx.Err() == nil && !errors.As(err, &ce)
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

// hasDrop reports whether rules drop traffic from or to ip.
func hasDrop(rules []string, ip string) bool {
	for _, r := range rules {
		if strings.Contains(r, ip+"/32") && strings.Contains(r, "DROP") {
			return true
		}
	}
	return false
}
