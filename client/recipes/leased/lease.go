// Package leased holds the lock recipes of the services other than
// ZooKeeper (redis-lock, redlock, etcd-mutex), whose grants are leases a
// client renews rather than nodes that die with a session. They register
// with recipes.RegisterService from init, so a binary runs them by
// importing this package: the controller does (through client/subjects),
// and so does chaos-worker-services. chaos-worker does not, so that a
// ZooKeeper worker's start does not initialise the etcd, gRPC and Redis
// clients (docs/measurements.md, "Worker start").
package leased

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/internal/queue"
)

// leases is what the lock recipes of services without ZooKeeper's
// sessions share (redis-lock, redlock, etcd-mutex): the grants a client
// holds under leases it renews, its "session" as the protocol reports it,
// and the events. A grant is lost (a lost event, state expired) when its
// renewal finds it gone or its lease has run out by the client's clock;
// the session is "connected" while a periodic probe of the service
// answers, "disconnected" from its first unanswered probe. Held is what
// a correct client checks before protected work: held, not lost, the
// probe answering, and (redis) the lease's validity not past.
type leases struct {
	log    *slog.Logger
	events *queue.Queue[recipes.SessionEvent]
	ctx    context.Context // ends at Close: renewals and the probe stop
	stop   context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	session   int64
	connected bool
	closed    bool
	grants    map[string]*leaseGrant
}

// leaseGrant is one lock held under a lease.
type leaseGrant struct {
	g    recipes.Grant
	lost bool
	// until is when the lease runs out by the client's clock (zero: the
	// service tells, etcd's keep-alive); past it the grant is not held.
	until time.Time
	// cancel stops the grant's renewal.
	cancel context.CancelFunc
}

func newLeases(log *slog.Logger, session int64) *leases {
	if log == nil {
		log = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &leases{log: log, events: queue.New[recipes.SessionEvent](), ctx: ctx, stop: stop, session: session, connected: true,
		grants: map[string]*leaseGrant{}}
	l.events.Push(recipes.SessionEvent{State: recipes.StateConnected, Session: session})
	return l
}

// randomSession is a client incarnation's id for a service without
// sessions (redis): random, so two workers never share one. It names the
// client in the protocol's session fields only; no fence depends on it.
func randomSession() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 2)
}

// Events implements recipes.Lock.
func (l *leases) Events() <-chan recipes.SessionEvent { return l.events.Out() }

// probe runs check every period until Close, and reports a session
// change at each change of its answer (a check is bounded by period).
func (l *leases) probe(period time.Duration, check func(ctx context.Context) error) {
	l.wg.Go(func() {
		for ctxsleep.Sleep(l.ctx, period) {
			ctx, cancel := context.WithTimeout(l.ctx, period)
			err := check(ctx)
			cancel()
			if l.ctx.Err() != nil {
				return
			}
			l.setConnected(err == nil)
			if err != nil {
				l.log.Info("probe unanswered", "err", err)
			}
		}
	})
}

func (l *leases) setConnected(up bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.connected == up {
		return
	}
	l.connected = up
	st := recipes.StateDisconnected
	if up {
		st = recipes.StateConnected
	}
	l.events.Push(recipes.SessionEvent{State: st, Session: l.session})
}

// newSession records that the client's session was replaced (etcd: a
// new lease after the old one expired).
func (l *leases) newSession(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.session, l.connected = id, true
	l.events.Push(recipes.SessionEvent{State: recipes.StateConnected, Session: id})
}

// currentSession is the session grants are taken under now.
func (l *leases) currentSession() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.session
}

// busy reports recipes.ErrAlreadyHeld for a key held (or lost and not released).
func (l *leases) busy(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.grants[key]; ok {
		return recipes.ErrAlreadyHeld
	}
	return nil
}

// add records a new grant and starts its renewal (nil: none), which runs
// every period until the grant is released or lost.
func (l *leases) add(g recipes.Grant, until time.Time, period time.Duration, renew func(ctx context.Context, lg *leaseGrant)) {
	ctx, cancel := context.WithCancel(l.ctx)
	lg := &leaseGrant{g: g, until: until, cancel: cancel}
	l.mu.Lock()
	l.grants[g.Key] = lg
	l.mu.Unlock()
	if renew == nil {
		return
	}
	l.wg.Go(func() {
		for ctxsleep.Sleep(ctx, period) {
			renew(ctx, lg)
		}
	})
}

// extend moves a grant's validity (a renewal that answered).
func (l *leases) extend(lg *leaseGrant, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !lg.lost {
		lg.until = until
	}
}

// expired reports whether the grant's validity is past by the client's
// clock.
func (l *leases) expired(lg *leaseGrant) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !lg.until.IsZero() && time.Now().After(lg.until)
}

// lose marks the grant lost for state (once), stops its renewal, and
// reports it.
func (l *leases) lose(lg *leaseGrant, state string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lg.lost || l.closed {
		return
	}
	lg.lost = true
	lg.cancel()
	g := lg.g
	l.events.Push(recipes.SessionEvent{State: state, Session: g.Session, Lost: &g})
	l.log.Info("lock lost", "key", g.Key, "token", g.Token, "state", state)
}

// expire reports session expired (its lease ended on the server) and
// every grant under it lost.
func (l *leases) expire(session int64) {
	l.mu.Lock()
	if !l.closed {
		l.events.Push(recipes.SessionEvent{State: recipes.StateExpired, Session: session})
	}
	l.mu.Unlock()
	l.loseSession(session, recipes.StateExpired)
}

// loseSession marks every grant of session lost (its lease expired).
func (l *leases) loseSession(session int64, state string) {
	l.mu.Lock()
	var of []*leaseGrant
	for _, lg := range l.grants {
		if lg.g.Session == session {
			of = append(of, lg)
		}
	}
	l.mu.Unlock()
	for _, lg := range of {
		l.lose(lg, state)
	}
}

// Held implements recipes.Lock.
func (l *leases) Held(key string) (recipes.Grant, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lg, ok := l.grants[key]
	if !ok || lg.lost || !l.connected || (!lg.until.IsZero() && time.Now().After(lg.until)) {
		return recipes.Grant{}, false
	}
	return lg.g, true
}

// take removes key's grant for its release: the grant, whether it was
// lost, or recipes.ErrNotHeld.
func (l *leases) take(key string) (*leaseGrant, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lg, ok := l.grants[key]
	if !ok {
		return nil, false, recipes.ErrNotHeld
	}
	delete(l.grants, key)
	lg.cancel()
	return lg, lg.lost, nil
}

// close stops renewals and the probe, lets release end what is still
// held (its errors only logged), then reports the close and every grant
// it ended, and closes the events.
func (l *leases) close(release func(ctx context.Context, lg *leaseGrant) error) {
	l.stop()
	l.wg.Wait()
	l.mu.Lock()
	var held []*leaseGrant
	for _, lg := range l.grants {
		held = append(held, lg)
	}
	l.grants = map[string]*leaseGrant{}
	session := l.session
	l.mu.Unlock()
	for _, lg := range held {
		if lg.lost {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := release(ctx, lg); err != nil {
			l.log.Warn("release at close", "key", lg.g.Key, "err", err)
		}
		cancel()
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.events.Push(recipes.SessionEvent{State: recipes.StateClosed, Session: session})
	for _, lg := range held {
		if !lg.lost {
			g := lg.g
			l.events.Push(recipes.SessionEvent{State: recipes.StateClosed, Session: g.Session, Lost: &g})
		}
	}
	l.events.Close()
}
