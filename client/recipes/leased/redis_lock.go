package leased

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

func init() {
	recipes.RegisterService(recipes.ServiceRedis, "redis-lock", newRedisLock)
}

// redisLock is the single-instance Redis lock, a lease lock with the same
// fencing gap as ZooKeeper's (docs/background.md#why-a-lock-needs-a-fence):
// SET key value NX PX ttl on the first server, a renewal every third of the
// TTL (PEXPIRE only while the value is still ours, in Lua), release by a
// Lua compare-and-delete, and the fencing token from INCR of a counter
// beside the key on the same server, taken after the SET succeeded, so a
// later grant has a higher token. Redis has no session: the TTL is the
// session timeout, the grant is lost (a lost event, state expired) when a
// renewal finds the value gone or another's, or when the TTL has run out
// since the last renewal that answered; Held also refuses past that
// validity, as a careful client does. A holder paused after its check still
// writes: that is what the fence is for.
type redisLock struct {
	*leases
	cfg    recipes.Config
	client *redis.Client
	ttl    time.Duration
	seq    int64 // the grants' values, unique within the session
}

// Lua scripts: a renewal and a release act only on the caller's own value.
var (
	redisRenew   = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
	redisRelease = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
)

// redisRetry is the pause between two SET NX of a waiting acquire: Redis
// has no queue or watch, so waiters poll.
const redisRetry = 10 * time.Millisecond

func newRedisLock(cfg recipes.Config) (recipes.Lock, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("redis-lock: no servers")
	}
	ttl := cfg.SessionTimeout
	return &redisLock{leases: newLeasesProbing(cfg, ttl, nil), cfg: cfg, client: newRedisClient(cfg.Servers[0], ttl), ttl: ttl}, nil
}

// newLeasesProbing starts the leases of a Redis client whose probe is a
// PING of its servers (all of clients, or of the first server).
func newLeasesProbing(cfg recipes.Config, ttl time.Duration, probe func(ctx context.Context) error) *leases {
	l := newLeases(cfg.Logger, randomSession())
	if probe == nil {
		c := newRedisClient(cfg.Servers[0], ttl)
		probe = func(ctx context.Context) error { return c.Ping(ctx).Err() }
	}
	l.probe(ttl/3, probe)
	return l
}

// newRedisClient is a client of one server whose calls time out within a
// third of the TTL and are never retried (a retried SET or INCR could
// land twice, and its outcome must be known or reported unknown).
func newRedisClient(addr string, ttl time.Duration) *redis.Client {
	t := max(ttl/3, 100*time.Millisecond)
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: t, ReadTimeout: t, WriteTimeout: t,
		MaxRetries: -1, PoolSize: 4, DisableIdentity: true, Protocol: 2})
}

// redisKey is the key of lock key under the root; its token counter is
// redisKey + ":token".
func redisKey(root, key string) string {
	if root == "" {
		root = recipes.DefaultRoot
	}
	return root + "/" + key
}

func (r *redisLock) Acquire(ctx context.Context, key string, timeout time.Duration) (recipes.Grant, error) {
	if err := r.busy(key); err != nil {
		return recipes.Grant{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	k := redisKey(r.cfg.Root, key)
	r.seq++
	value := fmt.Sprintf("%x:%d", r.currentSession(), r.seq)
	var lastErr error
	for {
		start := time.Now()
		ok, err := r.client.SetNX(ctx, k, value, r.ttl).Result()
		if err == nil && !ok {
			// Taken: by us, if an earlier SET whose answer was lost landed.
			cur, gerr := r.client.Get(ctx, k).Result()
			ok, err = gerr == nil && cur == value, nil
			if gerr != nil && !errors.Is(gerr, redis.Nil) {
				err = gerr
			}
		}
		if ok {
			return r.granted(ctx, key, k, value, start)
		}
		if err != nil {
			lastErr = err
		}
		if !ctxsleep.Sleep(ctx, redisRetry) {
			return recipes.Grant{}, r.giveUp(k, value, lastErr)
		}
	}
}

// granted takes the token (INCR after the SET, so a later grant has a
// higher token) and records the grant, valid until the TTL from before the
// SET was sent.
func (r *redisLock) granted(ctx context.Context, key, k, value string, start time.Time) (recipes.Grant, error) {
	tok, err := r.client.Incr(context.WithoutCancel(ctx), k+":token").Result()
	if err != nil {
		// Held, but with no token to fence with: give it back.
		_ = redisRelease.Run(context.WithoutCancel(ctx), r.client, []string{k}, value).Err()
		return recipes.Grant{}, recipes.Unknown("redis-lock: INCR of the token", err)
	}
	g := recipes.Grant{Key: key, Node: k + "=" + value, Token: tok, Session: r.currentSession()}
	r.add(g, start.Add(r.ttl), r.ttl/3, func(ctx context.Context, lg *leaseGrant) {
		sent := time.Now()
		n, err := redisRenew.Run(ctx, r.client, []string{k}, value, r.ttl.Milliseconds()).Int()
		switch {
		case ctx.Err() != nil:
		case err == nil && n == 1:
			r.extend(lg, sent.Add(r.ttl))
		case err == nil:
			r.lose(lg, recipes.StateExpired) // the value is gone or another's
		case r.expired(lg):
			r.lose(lg, recipes.StateExpired) // no renewal answered for a whole TTL
		}
	})
	return g, nil
}

// giveUp ends an acquire that ran out of time: a SET whose answer was
// lost may have landed, so the value is deleted if it is ours; if that
// cannot be told, the outcome is unknown.
func (r *redisLock) giveUp(k, value string, lastErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.ttl)
	defer cancel()
	if err := redisRelease.Run(ctx, r.client, []string{k}, value).Err(); err != nil {
		return recipes.Unknown("redis-lock: acquire timed out and its cleanup", errors.Join(lastErr, err))
	}
	return recipes.ErrTimeout
}

func (r *redisLock) Release(ctx context.Context, key string) error {
	lg, lost, err := r.take(key)
	if err != nil {
		return err
	}
	if lost {
		return recipes.ErrRevoked
	}
	return r.release(ctx, lg)
}

// release is the compare-and-delete: 1 deleted our value, 0 means it had
// expired (revoked), an error leaves it unknown.
func (r *redisLock) release(ctx context.Context, lg *leaseGrant) error {
	k := redisKey(r.cfg.Root, lg.g.Key)
	value := lg.g.Node[len(k)+1:]
	n, err := redisRelease.Run(ctx, r.client, []string{k}, value).Int()
	switch {
	case err != nil:
		return recipes.Unknown("redis-lock: release", err)
	case n == 0:
		return recipes.ErrRevoked
	}
	return nil
}

func (r *redisLock) Close() error {
	r.close(r.release)
	return r.client.Close()
}
