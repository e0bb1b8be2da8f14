package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
)

func init() {
	register("expire-holder", func() Fault { return expireHolder{} })
	selects("expire-holder", "a lock holder just past its lock check (any holder with a session after 3s)")
}

// expireHolder makes the ensemble expire the lock holder's session while
// the holder keeps running and stays reachable: the other way, besides a
// pause, that a client learns of its lost lock only after it has acted.
// Unlike a pause or a partition it is instant (one round trip and a
// commit), so it lands inside the holder's check-then-work-then-write
// window (Request.WorkMS) even when that window is short.
type expireHolder struct{}

// expireAfterCheck is how long after the controller sent the write the
// expiry should land: long enough for the request to reach the worker and
// its lock check to pass (an expiry before the check just makes the write
// fail "not holding"), short against any realistic work time. pause-holder
// waits as long, for the same reason.
const expireAfterCheck = 5 * time.Millisecond

// expireVerifyTimeout bounds the wait for the worker to report the
// expiry: after the close the server drops its connection, the client
// reconnects at once and is told the session is gone. That takes
// milliseconds on a quiet machine (docs/measurements.md, "Faults", its
// client faults); on a loaded one, with the worker or the servers
// descheduled, it has taken more than 5 s (the worker still
// "connected"). The bound is generous so that load costs time, not the
// fault's verification; the record says how long the report took.
const expireVerifyTimeout = 15 * time.Second

// expire-holder starts with history.FExpire; its stop, history.FExpireEnd,
// undoes nothing (a closed session stays closed) and records how the
// worker came back.
func (expireHolder) Verbs() (string, string) { return history.FExpire, history.FExpireEnd }

func (expireHolder) Inject(ctx context.Context, env *Env) (*Effect, error) {
	ws, err := workersOf(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	addrs, err := serverAddrs(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	etcd := cluster.ServiceOf(env.Service) == cluster.Etcd
	// ZooKeeper's close needs the session's password; etcd's revoke only
	// the lease's id.
	expirable := func(w Worker) bool { return w.Holding && w.Session != 0 && (etcd || len(w.Password) > 0) }
	// Prefer a holder just past its check, as isolate-holder does: the
	// expiry then lands with the work still ahead of it, wherever the
	// holder's cadence and the schedule's happen to line up (a fault that
	// lands at the end of a long work shows nothing of what the holder
	// does after it learns its session is gone).
	inWindow := func(w Worker) bool {
		if !w.InCriticalSection || w.CriticalSince.IsZero() {
			return false
		}
		age := time.Since(w.CriticalSince)
		return age >= expireAfterCheck && age < expireAfterCheck+freshCheckAge
	}
	w, ok := waitWorker(ctx, env, ws, freshWait+time.Second, freshWait, inWindow, expirable)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoTarget, whyNotExpirable(ws.Workers(), freshWait+time.Second))
	}
	target := fmt.Sprintf("process %d (pid %d) holding %s with token %d, session %s", w.Process, w.PID, w.Key, w.Token, sessionHex(w.Session))
	if w.InCriticalSection {
		target += ", in its critical section before its write"
	}
	addr := addrs[env.Rand.IntN(len(addrs))]
	if etcd {
		return revokeLease(ctx, ws, w, addr, target)
	}
	start := time.Now()
	res, err := closeSession(ctx, addr, w.Session, w.Password, 0)
	took := time.Since(start)
	v := history.Value{PID: w.PID, Target: target, Session: sessionHex(w.Session), TargetProcess: history.Int(w.Process)}
	undo := func(ctx context.Context) (history.Value, error) { return expireEnd(ctx, ws, w, v) }
	if errors.Is(err, errSessionRefused) {
		// Nothing closed: the session ended some other way meanwhile.
		return nil, withTarget(v, fmt.Errorf("%w: %w", ErrNoTarget, err))
	}
	// The close was sent (or may have been): watch the session go, from
	// when it was sent, when the server had just attached us to it.
	env.watchSession(watchSpec{Process: w.Process, PID: w.PID, Session: w.Session, Alive: res.Sent})
	switch {
	case errors.Is(err, errReplyLost):
		// Sent, and the reply overtaken by the close itself: judge the
		// close by its effects below, as every close is judged anyway.
		v.Detail = fmt.Sprintf("attached to session %s on %s with its password and sent closeSession; %v (%s)",
			sessionHex(w.Session), addr, errReplyLost, took.Round(time.Microsecond))
	case err != nil:
		// The close may or may not have been committed.
		return &Effect{Value: v, Undo: undo}, err
	default:
		v.Detail = fmt.Sprintf("attached to session %s on %s with its password and closed it (closeSession committed at zxid 0x%x, %s)",
			sessionHex(w.Session), addr, res.Zxid, took.Round(time.Microsecond))
	}
	eff := &Effect{Value: v, Undo: undo}
	st, after, seen := waitState(ctx, ws, w.PID, w.Session, expireVerifyTimeout, "expired")
	listing, silent, waited := waitUnlisted(ctx, addrs, w.Session, unlistedTimeout)
	eff.Value.Detail += fmt.Sprintf("; cons on %d servers after %s: %s", len(addrs), waited.Round(time.Millisecond), listingText(listing, silent))
	if !seen {
		eff.Value.Detail += fmt.Sprintf("; worker's last state for the session %q after %s", st, after.Round(time.Millisecond))
		return eff, fmt.Errorf("worker pid %d did not report session %s expired within %s (last %q)", w.PID, sessionHex(w.Session), expireVerifyTimeout, st)
	}
	eff.Value.Detail += fmt.Sprintf("; worker reported expired %s after the close", (took + after).Round(time.Millisecond))
	if len(listing) > 0 {
		return eff, fmt.Errorf("session %s still listed by %s %s after the worker saw it expire", sessionHex(w.Session), strings.Join(listing, ", "), waited.Round(time.Millisecond))
	}
	return eff, nil
}

// expireEnd records how the expired worker came back: with a new session,
// or not at all (retired, exited). An expiry has nothing to undo.
func expireEnd(_ context.Context, ws Workers, w Worker, v history.Value) (history.Value, error) {
	v.Detail = "nothing to undo (a closed session stays closed)"
	for _, cur := range ws.Workers() {
		if cur.PID != w.PID {
			continue
		}
		if cur.Session != 0 && cur.Session != w.Session {
			v.Detail += "; the worker has a new session " + sessionHex(cur.Session)
		} else {
			v.Detail += "; the worker has no new session yet"
		}
		return v, nil
	}
	v.Detail += "; the worker is no longer live (retired or exited)"
	return v, nil
}

func listingText(listing, silent []string) string {
	s := "none lists the session"
	if len(listing) > 0 {
		s = "listed by " + strings.Join(listing, ", ")
	}
	if len(silent) > 0 {
		s += " (no answer from " + strings.Join(silent, ", ") + ")"
	}
	return s
}

// whyNotExpirable says what the workers reported when none could be
// expired: whether anyone held a lock at all, and whether the holders had
// told their session (a message blaming the password when nobody held
// anything sent readers looking for a protocol fault).
func whyNotExpirable(ws []Worker, waited time.Duration) string {
	holding, withSession := 0, 0
	for _, w := range ws {
		if w.Holding {
			holding++
			if w.Session != 0 && len(w.Password) > 0 {
				withSession++
			}
		}
	}
	if holding == 0 {
		return fmt.Sprintf("no worker of %d reported holding a lock within %s", len(ws), waited)
	}
	return fmt.Sprintf("%d of %d workers hold a lock now, %d of them with their session id and password reported (none within %s)", holding, len(ws), withSession, waited)
}
