package leased

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/zkchaos/zkchaos/client/recipes"
)

func init() {
	recipes.RegisterService(recipes.ServiceRedis, "redlock", newRedlock)
}

// redlock is Redlock as github.com/go-redsync/redsync/v4 implements it,
// over the run's N independent Redis masters: a lock is granted when a
// majority took SET NX PX within the TTL, valid until the TTL minus the
// time taken and a drift allowance (Mutex.Until); renewed by Extend every
// third of the TTL; released by Unlock.
//
// The fencing token is an INCR of a counter beside the key on the first
// server, taken after the grant. Redlock itself has no counter (it is
// majorities of independent servers, and their INCRs agree on nothing:
// the highest of a majority's counters can belong to a server that saw
// writes the others missed, so a later holder could draw a lower token
// and be turned away while it holds the lock). One server's counter is
// monotonic (appendfsync always keeps it across a kill) and so a sound
// fence, but it is a single point of failure again: while the first
// server is down no grant gets a token (acquires fail). That is the
// argument against Redlock in one line: once there is a linearizable
// counter to fence with, the majority adds nothing.
type redlock struct {
	*leases
	cfg     recipes.Config
	rs      *redsync.Redsync
	clients []*redis.Client
	ttl     time.Duration

	mu      sync.Mutex
	mutexes map[string]*redsync.Mutex
}

func newRedlock(cfg recipes.Config) (recipes.Lock, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("redlock: no servers")
	}
	ttl := cfg.SessionTimeout
	r := &redlock{cfg: cfg, ttl: ttl, mutexes: map[string]*redsync.Mutex{}}
	var pools []redsyncredis.Pool
	for _, a := range cfg.Servers {
		c := newRedisClient(a, ttl)
		r.clients = append(r.clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	r.rs = redsync.New(pools...)
	r.leases = newLeasesProbing(cfg, ttl, r.pingMajority)
	return r, nil
}

// pingMajority answers when a majority of the servers answer PING: what
// a Redlock client needs to take or keep a lock.
func (r *redlock) pingMajority(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(r.clients))
	for i, c := range r.clients {
		wg.Go(func() { errs[i] = c.Ping(ctx).Err() })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	if ok <= len(r.clients)/2 {
		return fmt.Errorf("%d of %d servers answer: %w", ok, len(r.clients), errors.Join(errs...))
	}
	return nil
}

func (r *redlock) Acquire(ctx context.Context, key string, timeout time.Duration) (recipes.Grant, error) {
	if err := r.busy(key); err != nil {
		return recipes.Grant{}, err
	}
	k := redisKey(r.cfg.Root, key)
	m := r.rs.NewMutex(k, redsync.WithExpiry(r.ttl), redsync.WithTries(math.MaxInt32),
		redsync.WithRetryDelay(redisRetry), redsync.WithTimeoutFactor(0.2))
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := m.LockContext(actx); err != nil {
		if actx.Err() != nil {
			return recipes.Grant{}, recipes.ErrTimeout
		}
		return recipes.Grant{}, fmt.Errorf("redlock: %w", err)
	}
	tok, err := r.clients[0].Incr(ctx, k+":token").Result()
	if err != nil {
		_, _ = m.UnlockContext(context.WithoutCancel(ctx))
		return recipes.Grant{}, recipes.Unknown("redlock: INCR of the token on the first server", err)
	}
	g := recipes.Grant{Key: key, Node: k + "=" + m.Value(), Token: tok, Session: r.currentSession()}
	r.mu.Lock()
	r.mutexes[key] = m
	r.mu.Unlock()
	r.add(g, m.Until(), r.ttl/3, func(ctx context.Context, lg *leaseGrant) {
		ok, err := m.ExtendContext(ctx)
		switch {
		case ctx.Err() != nil:
		case ok:
			r.extend(lg, m.Until())
		case r.expired(lg):
			r.lose(lg, recipes.StateExpired)
		default:
			r.log.Info("redlock extend failed", "key", key, "err", err)
		}
	})
	return g, nil
}

func (r *redlock) Release(ctx context.Context, key string) error {
	lg, lost, err := r.take(key)
	if err != nil {
		return err
	}
	if lost {
		r.forget(key)
		return recipes.ErrRevoked
	}
	return r.release(ctx, lg)
}

// release unlocks on the servers: a majority deleted our value, or it had
// expired there (revoked), or the outcome is unknown.
func (r *redlock) release(ctx context.Context, lg *leaseGrant) error {
	m := r.forget(lg.g.Key)
	if m == nil {
		return recipes.ErrNotHeld
	}
	ok, err := m.UnlockContext(ctx)
	var taken redsync.ErrTaken
	switch {
	case ok:
		return nil
	case errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, &taken):
		return recipes.ErrRevoked
	}
	return recipes.Unknown("redlock: release", err)
}

func (r *redlock) forget(key string) *redsync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.mutexes[key]
	delete(r.mutexes, key)
	return m
}

func (r *redlock) Close() error {
	r.close(r.release)
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
