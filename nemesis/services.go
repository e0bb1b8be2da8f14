package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Lock services beyond ZooKeeper (--service). The server faults
// are the ZooKeeper faults' code under each service's own names, acting
// through cluster.Node as they do; a service's faults need that service,
// and the ZooKeeper faults (and those that speak ZooKeeper's protocol:
// rogue-client, expire-holder's closeSession) need ZooKeeper, so a run
// refuses another service's faults at validation and "all" is the faults
// of the run's service plus the client faults, which apply to every
// service.
func init() {
	for _, n := range []string{"pause-zk-leader", "pause-zk", "pause-zk-majority", "kill-zk",
		"partition-zk-leader", "partition-zk-halves", "partition-zk-ring", "partition-zk-bridge", "rogue-client"} {
		requires(n, needService(cluster.ZooKeeper))
	}
	requires("expire-holder", needService(cluster.ZooKeeper, cluster.Etcd))
	for name, mk := range map[string]func() Fault{
		"pause-redis":           func() Fault { return pauseZK{} },
		"kill-redis":            func() Fault { return killZK{} },
		"partition-redis":       func() Fault { return cutClients{} },
		"pause-etcd":            func() Fault { return pauseZK{} },
		"pause-etcd-leader":     func() Fault { return pauseZK{leader: true} },
		"kill-etcd":             func() Fault { return killZK{} },
		"partition-etcd-leader": func() Fault { return partition{shape: etcdLeaderAlone} },
	} {
		register(name, mk)
		requires(name, needService(strings.SplitN(name, "-", 3)[1]))
	}
	for _, n := range []string{"pause-redis", "kill-redis", "pause-etcd", "kill-etcd"} {
		selects(n, anyServer)
	}
	selects("partition-redis", "a server drawn by the seed, cut from every client")
	selects("pause-etcd-leader", "the etcd leader")
	selects("partition-etcd-leader", leaderAlone)
	for _, n := range []string{"pause-redis", "pause-etcd", "pause-etcd-leader"} {
		requires(n, needServer(cluster.CanPause))
	}
	for _, n := range []string{"kill-redis", "kill-etcd"} {
		requires(n, needServer(cluster.CanKill))
	}
	for _, n := range []string{"partition-redis", "partition-etcd-leader"} {
		requires(n, needServer(cluster.CanPartition))
	}
}

// etcdLeaderAlone cuts the leader from every other member, as
// partition-zk-leader does: etcd's leader steps down once it misses a
// quorum for an election timeout (CheckQuorum), and the majority elects.
func etcdLeaderAlone(ids []int, leader int, _ *rand.Rand) grudge { return isolateOne(ids, leader) }

// needService is a fault's need of one of the named services.
func needService(names ...string) need {
	return func(c Caps) error {
		svc := cluster.ServiceOf(c.Service)
		for _, n := range names {
			if svc == n {
				return nil
			}
		}
		return fmt.Errorf("it acts on %s, and this run is %s %s", strings.Join(names, " or "), setting.Name("Service"), svc)
	}
}

// leaderless reports whether the run's service has no leader to aim at or
// to wait for (redis: independent masters).
func (env *Env) leaderless() bool { return cluster.ServiceOf(env.Service) == cluster.Redis }

// clientCutter is a server that can be cut from all its clients (local
// nodes in netns mode): the partition of a service whose servers do not
// talk to each other.
type clientCutter interface {
	CutClients(ctx context.Context) (verified string, err error)
}

// cutClients cuts one redis server (drawn with the run's seed) from every
// client: the Redlock majority loses a vote, and the single-instance lock
// its only server when the first is drawn. Verified by the rules and by
// the server's own probe going unanswered; the undo heals and waits for
// every server to answer again.
type cutClients struct{}

func (cutClients) Verbs() (string, string) { return history.FPartition, history.FHeal }

func (cutClients) Inject(ctx context.Context, env *Env) (*Effect, error) {
	c, leader, err := baseline(ctx, env)
	if err != nil {
		return nil, err
	}
	n, err := pickNode(ctx, env, c)
	if err != nil {
		return nil, err
	}
	cut, ok := n.(clientCutter)
	if !ok {
		return nil, fmt.Errorf("%w: n%d cannot be cut from its clients (%w)", ErrNoTarget, n.ID(), cluster.ErrUnsupported)
	}
	_, target, err := targetOf(ctx, n, leader)
	if err != nil {
		return nil, err
	}
	target = "cut " + target + " from every client"
	byID := map[int]cluster.Node{n.ID(): n}
	eff := &Effect{Value: history.Value{Target: target}, Undo: healUndo(c, byID, []int{n.ID()}, target)}
	v, err := cut.CutClients(ctx)
	if err != nil {
		return eff, err
	}
	eff.Value.Detail = fmt.Sprintf("n%d: %s", n.ID(), v)
	return eff, nil
}
