package leased

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zkchaos/zkchaos/client/recipes"
)

func init() {
	recipes.RegisterService(recipes.ServiceEtcd, "etcd-mutex", newEtcdMutex)
}

// etcdMutex is etcd's own lock recipe, concurrency.Mutex, under a
// concurrency.Session: the session is a lease of the session timeout
// (rounded up to whole seconds; the server raises it to its minimum)
// kept alive by the client, the lock a key under the lease in a queue
// ordered by create revision. The fencing token is the lock key's create
// revision: etcd's revisions grow with every write of the cluster, so a
// later grant always has a higher one. The session's lease lost (its
// keep-alive saw it expire or revoked) is the session expired: every
// grant under it is reported lost (state expired), and a new session
// (lease) is taken for the next acquires, reported connected.
type etcdMutex struct {
	*leases
	cfg recipes.Config
	cli *clientv3.Client
	ttl int

	mu      sync.Mutex
	session *concurrency.Session
}

func newEtcdMutex(cfg recipes.Config) (recipes.Lock, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("etcd-mutex: no servers")
	}
	var eps []string
	for _, s := range cfg.Servers {
		eps = append(eps, "http://"+s)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd-mutex: %w", err)
	}
	e := &etcdMutex{cfg: cfg, cli: cli, ttl: int(math.Ceil(cfg.SessionTimeout.Seconds()))}
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(e.ttl))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd-mutex: session: %w", err)
	}
	e.session = s
	e.leases = newLeases(cfg.Logger, int64(s.Lease()))
	e.watchSession(s)
	period := max(cfg.SessionTimeout/3, 200*time.Millisecond)
	e.probe(period, func(ctx context.Context) error {
		_, err := cli.Get(ctx, "zkchaos-probe")
		return err
	})
	return e, nil
}

// watchSession reports s's end: its grants lost, expired, unless the
// recipe is closing.
func (e *etcdMutex) watchSession(s *concurrency.Session) {
	e.wg.Go(func() {
		select {
		case <-s.Done():
		case <-e.ctx.Done():
			return
		}
		if e.ctx.Err() != nil {
			return
		}
		e.log.Info("etcd session lost", "lease", fmt.Sprintf("0x%x", int64(s.Lease())))
		e.expire(int64(s.Lease()))
	})
}

// current is the live session, a new one when the last has ended.
func (e *etcdMutex) current(ctx context.Context) (*concurrency.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.session.Done():
	default:
		return e.session, nil
	}
	s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(e.ttl), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, err
	}
	e.session = s
	e.newSession(int64(s.Lease()))
	e.watchSession(s)
	return s, nil
}

func (e *etcdMutex) Acquire(ctx context.Context, key string, timeout time.Duration) (recipes.Grant, error) {
	if err := e.busy(key); err != nil {
		return recipes.Grant{}, err
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := e.current(actx)
	if err != nil {
		if actx.Err() != nil {
			return recipes.Grant{}, recipes.ErrTimeout
		}
		return recipes.Grant{}, fmt.Errorf("etcd-mutex: new session: %w", err)
	}
	m := concurrency.NewMutex(s, redisKey(e.cfg.Root, key))
	if err := m.Lock(actx); err != nil {
		// Lock deletes its key when its wait fails; a Txn whose answer was
		// lost may still have put it, under the session's lease.
		if actx.Err() != nil {
			return recipes.Grant{}, recipes.ErrTimeout
		}
		return recipes.Grant{}, recipes.Unknown("etcd-mutex: lock", err)
	}
	resp, err := e.cli.Get(ctx, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		_ = m.Unlock(context.WithoutCancel(ctx))
		return recipes.Grant{}, recipes.Unknown("etcd-mutex: read the lock key's create revision", errors.Join(err, errors.New("key missing")))
	}
	g := recipes.Grant{Key: key, Node: m.Key(), Token: resp.Kvs[0].CreateRevision, Session: int64(s.Lease())}
	e.add(g, time.Time{}, 0, nil)
	select {
	case <-s.Done():
		e.loseSession(g.Session, recipes.StateExpired)
	default:
	}
	return g, nil
}

func (e *etcdMutex) Release(ctx context.Context, key string) error {
	lg, lost, err := e.take(key)
	if err != nil {
		return err
	}
	if lost {
		return recipes.ErrRevoked
	}
	return e.release(ctx, lg)
}

// release deletes the lock key if it is still ours (its create revision
// is the grant's token): deleted, revoked (gone with its lease), or
// unknown.
func (e *etcdMutex) release(ctx context.Context, lg *leaseGrant) error {
	resp, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(lg.g.Node), "=", lg.g.Token)).
		Then(clientv3.OpDelete(lg.g.Node)).Commit()
	switch {
	case err != nil:
		return recipes.Unknown("etcd-mutex: release", err)
	case !resp.Succeeded:
		return recipes.ErrRevoked
	}
	return nil
}

func (e *etcdMutex) Close() error {
	e.close(e.release)
	e.mu.Lock()
	s := e.session
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = e.cli.Revoke(ctx, s.Lease())
	return e.cli.Close()
}
