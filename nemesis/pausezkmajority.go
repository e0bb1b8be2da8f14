package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
)

func init() {
	register("pause-zk-majority", func() Fault { return pauseZKMajority{} })
	selects("pause-zk-majority", "a majority without the leader")
	requires("pause-zk-majority", needServer(cluster.CanPause))
}

// pauseZKMajority stops a majority of the servers, all followers, with
// SIGSTOP, so the ensemble has no quorum and no leader for the whole hold
// (the leader, still running, loses its quorum): an outage of
// the service itself (a rack losing power, a bad rollout), not of one
// server. While no leader runs, nobody can expire a session: ZooKeeper's
// session tracker lives in the leader, and a newly elected leader gives
// every session it inherits a fresh timeout. A client library that gives
// up its session on its own during the outage (Curator injects an
// expiration once SUSPENDED lasts a session timeout) comes back with a
// new session while its old session, and that session's ephemeral nodes,
// live on for up to one more timeout: the window of CURATOR-696.
type pauseZKMajority struct{}

func (pauseZKMajority) Verbs() (string, string) { return history.FPause, history.FResume }

func (pauseZKMajority) Inject(ctx context.Context, env *Env) (*Effect, error) {
	c, leader, err := baseline(ctx, env)
	if err != nil {
		return nil, err
	}
	// The leader is never one of them: it stays up, loses its quorum
	// and stops serving, so the ensemble comes back through an election,
	// whose new leader gives every session a fresh timeout. (A paused
	// leader resumed with its followers just carries on, its session
	// tracker expiring at once whatever timed out meanwhile: that is a
	// long pause of the leader, not an outage.)
	var followers []cluster.Node
	for _, n := range c.Nodes() {
		if n.ID() != leader.ID() {
			followers = append(followers, n)
		}
	}
	need := majority(len(c.Nodes()))
	if len(followers) < need {
		return nil, fmt.Errorf("%w: %d servers: a majority (%d) without the leader needs at least 3", ErrNoTarget, len(c.Nodes()), need)
	}
	slices.SortFunc(followers, func(a, b cluster.Node) int { return a.ID() - b.ID() })
	// A seeded shuffle of the followers in id order, so a seed repeats
	// its choice (with three servers both followers are chosen).
	env.Rand.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
	chosen := followers[:need]
	slices.SortFunc(chosen, func(a, b cluster.Node) int { return a.ID() - b.ID() })
	var (
		targets []string
		paused  []pausedZK
	)
	for _, n := range chosen {
		p, target, err := targetOf(ctx, n, leader)
		if err != nil {
			return nil, err
		}
		targets = append(targets, target)
		paused = append(paused, pausedZK{node: n, before: p, target: target})
	}
	target := "majority " + strings.Join(targets, "; ")
	eff := &Effect{Value: history.Value{PID: paused[0].before.PID, Target: target}, Undo: resumeZKMajority(c, paused, target)}
	var verified []string
	for _, pz := range paused {
		v, err := pz.node.Pause(ctx)
		if err != nil {
			return eff, fmt.Errorf("pausing n%d: %w", pz.node.ID(), err)
		}
		verified = append(verified, fmt.Sprintf("n%d: %s", pz.node.ID(), v))
	}
	eff.Value.Detail = strings.Join(verified, "; ")
	// The effect that matters is the outage: no server serves (the paused
	// ones do not answer, the leader and any other follower are out of a
	// quorum).
	saw, after, err := observe(ctx, c, effectWait, noneServing)
	if err != nil {
		return eff, fmt.Errorf("majority paused but the ensemble still serves: %w", err)
	}
	eff.Value.Detail += fmt.Sprintf("; %s after %s", saw, after.Round(time.Millisecond))
	return eff, nil
}

// noneServing is seen when no server serves: the ensemble has no quorum.
func noneServing(sts []cluster.NodeStatus) (string, bool) {
	for _, s := range sts {
		if s.Err == nil && s.Status.Serving {
			return "", false
		}
	}
	return "no quorum, no server serves (" + cluster.Summary(sts) + ")", true
}

// pausedZK is one server a majority pause stopped, with the process it
// stopped.
type pausedZK struct {
	node   cluster.Node
	before cluster.Process
	target string
}

// resumeZKMajority continues every paused server (a server restarted
// meanwhile is said to be gone instead) and waits for the whole ensemble
// to serve again. It tries every server even when one fails.
func resumeZKMajority(c cluster.Cluster, paused []pausedZK, target string) func(context.Context) (history.Value, error) {
	return func(ctx context.Context) (history.Value, error) {
		v := history.Value{PID: paused[0].before.PID, Target: target}
		var (
			did  []string
			errs []error
		)
		for _, pz := range paused {
			d, err := resumeServer(ctx, pz.node, pz.before)
			if err != nil {
				errs = append(errs, fmt.Errorf("n%d: %w", pz.node.ID(), err))
				continue
			}
			did = append(did, fmt.Sprintf("n%d: %s", pz.node.ID(), d))
		}
		v.Detail = strings.Join(did, "; ")
		if err := errors.Join(errs...); err != nil {
			return v, err
		}
		return healed(ctx, c, v)
	}
}
