package nemesis

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
)

func init() {
	register("pause-zk-leader", func() Fault { return pauseZK{leader: true} })
	register("pause-zk", func() Fault { return pauseZK{} })
	selects("pause-zk-leader", "the ZooKeeper leader")
	selects("pause-zk", anyServer)
	requires("pause-zk-leader", needServer(cluster.CanPause))
	requires("pause-zk", needServer(cluster.CanPause))
}

// anyServer is the selector of the faults that draw one running server
// with the run's seed.
const anyServer = "a running server, drawn by the seed"

// pauseZK stops a server with SIGSTOP: a server-side GC pause or a hung
// VM. The leader's pause is the interesting one: its followers elect a
// new leader while the old one still believes it leads, and clients of
// the old leader see their sessions move.
type pauseZK struct{ leader bool }

func (pauseZK) Verbs() (string, string) { return history.FPause, history.FResume }

func (p pauseZK) Inject(ctx context.Context, env *Env) (*Effect, error) {
	c, leader, err := baseline(ctx, env)
	if err != nil {
		return nil, err
	}
	n := leader
	if !p.leader {
		if n, err = pickNode(ctx, env, c); err != nil {
			return nil, err
		}
	}
	before, target, err := targetOf(ctx, n, leader)
	if err != nil {
		return nil, err
	}
	eff := &Effect{Value: history.Value{PID: before.PID, Target: target}, Undo: resumeZK(c, n, before, target)}
	verified, err := n.Pause(ctx)
	if err != nil {
		return eff, err
	}
	eff.Value.Detail = verified
	if leader != nil && n.ID() == leader.ID() {
		// The verified effect is the stop; whether the others elect a new
		// leader is what the pause shows, and is recorded either way.
		eff.Value.Detail += electionDetail(ctx, c, leader)
	}
	return eff, nil
}

// resumeZK continues the server, verifies it runs, and waits for the
// whole ensemble to serve again. A server restarted meanwhile (another
// incarnation) is not paused any more, which is said instead.
func resumeZK(c cluster.Cluster, n cluster.Node, before cluster.Process, target string) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		v := history.Value{PID: before.PID, Target: target}
		var err error
		if v.Detail, err = resumeServer(ctx, n, before); err != nil {
			return v, err
		}
		return healed(ctx, c, v)
	}
}

// resumeServer continues the server paused as before, unless it was
// restarted meanwhile (another incarnation, not paused any more), which
// it says instead; the detail is what it did.
func resumeServer(ctx context.Context, n cluster.Node, before cluster.Process) (string, error) {
	now, err := n.Process(ctx)
	switch {
	case err != nil:
		return "", err
	case now.Instance != before.Instance:
		return fmt.Sprintf("%s gone (server now %q)", before.Instance, now.Instance), nil
	}
	return n.Resume(ctx)
}
