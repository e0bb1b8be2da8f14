package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/proc"
)

func init() { register("kill-zk", func() Fault { return killZK{} }) }

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
	n, err := pickNode(env, c)
	if err != nil {
		return nil, err
	}
	pid, target := n.PID(), targetOf(n, leader)
	eff := &Effect{Value: history.Value{PID: pid, Target: target}, Undo: restartZK(c, n, pid, target)}
	if err := n.Kill(ctx); err != nil {
		return eff, err
	}
	// Verified from both sides: the kernel has no such process, and the
	// address refuses four-letter words.
	if proc.Alive(pid) {
		return eff, fmt.Errorf("pid %d still alive after SIGKILL", pid)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	_, perr := n.Status(pctx)
	cancel()
	if perr == nil {
		return eff, fmt.Errorf("pid %d gone but %s still answers srvr", pid, n.ClientAddr())
	}
	eff.Value.Detail = "pid gone from /proc; srvr refused"
	if n.ID() == leader.ID() {
		eff.Value.Detail += electionDetail(ctx, c, leader)
	}
	return eff, nil
}

// restartZK starts the server again with its data intact and verifies it
// serves, then waits for the whole ensemble.
func restartZK(c cluster.Cluster, n cluster.Node, pid int, target string) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		v := history.Value{PID: pid, Target: target}
		start := time.Now()
		if n.PID() == 0 {
			if err := n.Start(ctx); err != nil {
				return v, err
			}
		}
		v.PID = n.PID()
		sctx, scancel := context.WithTimeout(ctx, healWait)
		st, err := cluster.WaitServing(sctx, n)
		scancel()
		if err != nil {
			return v, fmt.Errorf("restarted as pid %d but not serving: %w", v.PID, err)
		}
		v.Detail = fmt.Sprintf("restarted as pid %d, serving as %s after %s", v.PID, st.Mode, time.Since(start).Round(time.Millisecond))
		return healed(ctx, c, v)
	}
}
