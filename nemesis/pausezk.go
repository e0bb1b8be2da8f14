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
}

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
		if n, err = pickNode(env, c); err != nil {
			return nil, err
		}
	}
	pid, target := n.PID(), targetOf(n, leader)
	eff := &Effect{Value: history.Value{PID: pid, Target: target}, Undo: resumeZK(c, n, pid, target)}
	if err := n.Pause(ctx); err != nil {
		return eff, err
	}
	eff.Value.Detail = "process state T in /proc"
	if n.ID() == leader.ID() {
		// The verified effect is the stop; whether the others elect a new
		// leader is what the pause shows, and is recorded either way.
		eff.Value.Detail += electionDetail(ctx, c, leader)
	}
	return eff, nil
}

// resumeZK SIGCONTs the server, verifies it runs, and waits for the whole
// ensemble to serve again.
func resumeZK(c cluster.Cluster, n cluster.Node, pid int, target string) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		v := history.Value{PID: pid, Target: target}
		if n.PID() != pid {
			v.Detail = fmt.Sprintf("pid %d gone (server now pid %d)", pid, n.PID())
		} else if err := n.Resume(ctx); err != nil {
			return v, err
		} else {
			v.Detail = "process no longer stopped"
		}
		return healed(ctx, c, v)
	}
}
