package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
)

func init() {
	register("kill-zk", func() Fault { return killZK{} })
	selects("kill-zk", anyServer)
	requires("kill-zk", needServer(cluster.CanKill))
}

// killZK SIGKILLs a server (a crash, power loss of one machine) and later
// starts it again on its data directory, as an operator would: what it
// tests is recovery from the transaction log and snapshots, and the
// sessions that were connected to it moving elsewhere.
type killZK struct{}

func (killZK) Verbs() (string, string) { return history.FKill, history.FRestart }

func (killZK) Inject(ctx context.Context, env *Env) (*Effect, error) {
	c, leader, err := baseline(ctx, env)
	if err != nil {
		return nil, err
	}
	n, err := pickNode(ctx, env, c)
	if err != nil {
		return nil, err
	}
	before, target, err := targetOf(ctx, n, leader)
	if err != nil {
		return nil, err
	}
	eff := &Effect{Value: history.Value{PID: before.PID, Target: target}, Undo: restartZK(c, n, before, target)}
	verified, err := n.Kill(ctx)
	if err != nil {
		return eff, err
	}
	eff.Value.Detail = verified
	if leader != nil && n.ID() == leader.ID() {
		eff.Value.Detail += electionDetail(ctx, c, leader)
	}
	return eff, nil
}

// restartZK starts the server again with its data intact and verifies it
// serves, then waits for the whole ensemble.
func restartZK(c cluster.Cluster, n cluster.Node, before cluster.Process, target string) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		v := history.Value{PID: before.PID, Target: target}
		start := time.Now()
		now, err := n.Process(ctx)
		if err != nil {
			return v, err
		}
		started := "already running again as " + now.Instance
		if !now.Running {
			if started, err = n.Start(ctx); err != nil {
				return v, err
			}
			if now, err = n.Process(ctx); err != nil {
				return v, err
			}
		}
		v.PID = now.PID
		sctx, scancel := context.WithTimeout(ctx, healWait)
		st, err := cluster.WaitServing(sctx, n)
		scancel()
		if err != nil {
			return v, fmt.Errorf("%s but not serving: %w", started, err)
		}
		v.Detail = fmt.Sprintf("restarted: %s, serving as %s after %s", started, st.Mode, time.Since(start).Round(time.Millisecond))
		return healed(ctx, c, v)
	}
}
