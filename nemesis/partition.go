package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
)

func init() {
	for name, shape := range map[string]func(ids []int, leader int, r *rand.Rand) grudge{
		"partition-zk-leader": func(ids []int, leader int, _ *rand.Rand) grudge { return isolateOne(ids, leader) },
		"partition-zk-halves": func(ids []int, _ int, r *rand.Rand) grudge { return halves(ids, r) },
		"partition-zk-ring":   func(ids []int, _ int, r *rand.Rand) grudge { return ring(ids, r) },
		"partition-zk-bridge": func(ids []int, _ int, r *rand.Rand) grudge { return bridge(ids, r) },
	} {
		register(name, func() Fault { return partition{shape: shape} })
		requires(name, needServer(cluster.CanPartition))
	}
	selects("partition-zk-leader", leaderAlone)
	selects("partition-zk-halves", "random halves, redrawn until the leader is cut from a server")
	selects("partition-zk-ring", "a majorities ring, redrawn until the leader is cut from a server")
	selects("partition-zk-bridge", "halves joined by a bridge server, redrawn until the leader is cut from a server")
}

// leaderAlone is the selector of the partitions that cut the leader from
// every other server.
const leaderAlone = "the leader, cut from every other server"

// maxDraws bounds the redrawing of a random grudge that the leader would
// not notice (see Inject).
const maxDraws = 10

// partition cuts traffic between servers by DROP rules in their own
// namespaces, in one of Jepsen's shapes. What it verifies is what
// ZooKeeper makes of the cut, as the four-letter words show: a leader that
// loses its majority is replaced, and a server cut from the leader stops
// serving.
type partition struct {
	shape func(ids []int, leader int, r *rand.Rand) grudge
}

func (partition) Verbs() (string, string) { return history.FPartition, history.FHeal }

func (p partition) Inject(ctx context.Context, env *Env) (*Effect, error) {
	c, leader, err := baseline(ctx, env)
	if err != nil {
		return nil, err
	}
	nodes := c.Nodes()
	byID := map[int]cluster.Node{}
	var ids []int
	for _, n := range nodes {
		byID[n.ID()] = n
		ids = append(ids, n.ID())
	}
	// A grudge that cuts nothing of the leader's (two followers apart, in
	// a ring or bridge of three) changes nothing ZooKeeper does until the
	// next election, so it could never be verified: draw again. Only the
	// random shapes can draw such a grudge.
	var g grudge
	draws := 0
	for draws < maxDraws {
		draws++
		g = p.shape(ids, leader.ID(), env.Rand)
		if len(g[leader.ID()]) > 0 {
			break
		}
	}
	if g.empty() {
		return nil, fmt.Errorf("%w: %d servers cannot be partitioned this way", ErrNoTarget, len(ids))
	}
	target := "cut " + g.String()
	involved := slices.Sorted(func(yield func(int) bool) {
		for id, peers := range g {
			if len(peers) > 0 && !yield(id) {
				return
			}
		}
	})
	eff := &Effect{Value: history.Value{Target: target}, Undo: healUndo(c, byID, involved, target)}
	var verified []string
	for _, id := range involved {
		var peers []cluster.Node
		for _, b := range g[id] {
			peers = append(peers, byID[b])
		}
		v, err := byID[id].Isolate(ctx, peers)
		if err != nil {
			if errors.Is(err, errors.ErrUnsupported) && id == involved[0] {
				return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
			}
			return eff, fmt.Errorf("rules on n%d: %w", id, err)
		}
		verified = append(verified, fmt.Sprintf("n%d: %s", id, v))
	}
	details := []string{strings.Join(verified, "; ")}
	if draws > 1 {
		details = append(details, fmt.Sprintf("drawn %d times (earlier draws did not cut the leader n%d)", draws, leader.ID()))
	}
	// What ZooKeeper must show: a leader without a majority is replaced;
	// otherwise the servers cut from it stop serving.
	want := stopsServing(leader, g[leader.ID()])
	expect := fmt.Sprintf("servers cut from leader n%d stop serving", leader.ID())
	if len(g.sees(ids, leader.ID())) < majority(len(ids)) {
		want, expect = newLeader(leader), fmt.Sprintf("leader n%d lost its majority, a new leader", leader.ID())
	}
	saw, after, err := observe(ctx, c, effectWait, want)
	if err != nil {
		eff.Value.Detail = strings.Join(append(details, "expected "+expect), "; ")
		return eff, fmt.Errorf("partition in place but its effect was not seen: %w", err)
	}
	eff.Value.Detail = strings.Join(append(details, fmt.Sprintf("%s after %s", saw, after.Round(time.Millisecond))), "; ")
	return eff, nil
}

// healUndo removes the rules on every involved server, verifies none
// remain, and waits for the whole ensemble to serve again.
func healUndo(c cluster.Cluster, byID map[int]cluster.Node, ids []int, target string) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		v := history.Value{Target: target}
		var errs []error
		var verified []string
		for _, id := range ids {
			did, err := byID[id].Heal(ctx)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			verified = append(verified, fmt.Sprintf("n%d: %s", id, did))
		}
		if err := errors.Join(errs...); err != nil {
			return v, err
		}
		v.Detail = "no rules left (" + strings.Join(verified, "; ") + ")"
		return healed(ctx, c, v)
	}
}
