package nemesis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// The client faults that can cost a worker its session (pause-holder,
// pause-worker, isolate-holder, expire-holder) watch that session on the
// servers while they are in effect, and record the moment they see it
// gone as a nemesis observation (history.FSessionGone). That is the
// nemesis's own evidence of an expiry, independent of what the worker
// reports (a paused worker reports nothing until it runs again), which is
// what the lock checkers need to excuse a grant to another client.
//
// The evidence is the four-letter word cons, which lists every connection
// of a server with its session id. A session is gone when it has been
// seen listed, and then every server answers and none lists it. While the
// fault is in effect the target cannot open a new connection (it is
// stopped, or cut off from every server, or its session was closed, and a
// closed session never comes back), so its last connection disappearing
// from every server means the ensemble ended the session: it closes a
// session's connection when it expires or closes it. A server that does
// not answer (paused, cut off) might still list it, so then nothing is
// concluded. A session never seen listed (its worker was between
// connections when the fault hit) is never declared gone: cons cannot
// tell such a session from one that ended.

// watchEvery is the period of the session watch: fine enough that the
// observation lands within a tick of the expiry (ticks are 200 ms by
// default), coarse enough that three servers answer cons in between.
const watchEvery = 50 * time.Millisecond

// watchSpec is the session of a fault's target.
type watchSpec struct {
	Process int
	PID     int
	Session int64
	// Alive is when the session is known to have existed without a poll
	// (expire-holder: its closeSession was sent on it); zero when only a
	// poll can show it alive.
	Alive time.Time
}

// watchSession starts watching spec's session on env's servers until the
// fault is undone (its scope ends). Outside a scheduler's injection, or
// without a session or servers, there is nothing to watch with.
func (env *Env) watchSession(spec watchSpec) {
	sc := env.scope
	if sc == nil || spec.Session == 0 || cluster.ServiceOf(env.Service) != cluster.ZooKeeper {
		// Only ZooKeeper lists its sessions (cons); another service's
		// sessions are not watched, and its grants are excused by what the
		// worker reports only.
		return
	}
	addrs, err := serverAddrs(env)
	if err != nil {
		env.Logger.Warn("nemesis: session not watched", "session", sessionHex(spec.Session), "err", err)
		return
	}
	sc.start(func(ctx context.Context) { sc.s.watch(ctx, addrs, spec) })
}

// watch polls cons on addrs every watchEvery until ctx ends or the session
// is seen gone, which it records once.
func (s *Scheduler) watch(ctx context.Context, addrs []string, spec watchSpec) {
	rec := s.cfg.History
	var lastSeen *int64
	how := ""
	if !spec.Alive.IsZero() {
		lastSeen = history.Int64(rec.Since() - int64(time.Since(spec.Alive)))
		how = "its closeSession was sent"
	}
	start, polls := time.Now(), 0
	for {
		// A poll starts no later than any answer that lists the session,
		// so its start is a time the session certainly existed at.
		at := rec.Since()
		listing, silent := serversListing(ctx, addrs, spec.Session)
		if ctx.Err() != nil {
			return // cut short by the undo: says nothing
		}
		polls++
		switch {
		case len(listing) > 0:
			lastSeen, how = history.Int64(at), "listed by "+strings.Join(listing, ", ")
		case len(silent) > 0 || lastSeen == nil:
			// Cannot tell, or never seen: keep watching.
		default:
			s.recordGone(spec, *lastSeen, how, fmt.Sprintf("cons on all %d servers lists no sid=%s (%d polls every %s over %s of watching)",
				len(addrs), sessionHex(spec.Session), polls, watchEvery, time.Since(start).Round(time.Millisecond)))
			return
		}
		if !ctxsleep.Sleep(ctx, watchEvery) {
			if lastSeen == nil {
				s.cfg.Env.Logger.Warn("nemesis: session never seen on the servers while the fault was in effect; no expiry recorded",
					"session", sessionHex(spec.Session), "process", spec.Process)
			}
			return
		}
	}
}

// recordGone records the session-gone observation.
func (s *Scheduler) recordGone(spec watchSpec, lastSeen int64, how, seen string) {
	v := &history.Value{
		Target:        fmt.Sprintf("process %d (pid %d), session %s", spec.Process, spec.PID, sessionHex(spec.Session)),
		TargetProcess: history.Int(spec.Process),
		PID:           spec.PID,
		Session:       sessionHex(spec.Session),
		LastSeenNS:    history.Int64(lastSeen),
		Verified:      history.Bool(true),
		Detail:        fmt.Sprintf("%s; last seen alive at %s, when %s", seen, time.Duration(lastSeen).Round(time.Millisecond), how),
	}
	s.instant(history.FSessionGone, v)
	s.cfg.Env.Logger.Info("nemesis: session gone from every server", "process", spec.Process, "session", v.Session, "detail", v.Detail)
}
