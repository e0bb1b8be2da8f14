package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// Bounds of the ZooKeeper faults. An injection waits up to effectWait to
// see its effect in the four-letter words (an election takes about 3 s at
// tickTime 200 ms); an undo waits up to healWait for the whole ensemble to
// serve again, so the next fault starts from a healthy ensemble and the
// record says how long healing took.
const (
	baselineWait = 15 * time.Second
	effectWait   = 15 * time.Second
	healWait     = 30 * time.Second
	// probeTimeout bounds one srvr: a paused or cut-off server never
	// answers, and must not hide the others' answers.
	probeTimeout = 700 * time.Millisecond
)

// baseline waits for env's whole ensemble and returns it with its leader,
// so every server fault starts from a known state and can tell what it
// changed. A fault that finds no ensemble or no leader does nothing
// (ErrNoTarget): it could not verify anything it did. A service without
// a leader (redis) gives a nil leader.
func baseline(ctx context.Context, env *Env) (cluster.Cluster, cluster.Node, error) {
	c := env.Cluster
	if c == nil {
		return nil, nil, fmt.Errorf("%w: no access to the ensemble (%w)", ErrNoTarget, cluster.ErrUnsupported)
	}
	wctx, cancel := context.WithTimeout(ctx, baselineWait)
	defer cancel()
	if err := c.WaitReady(wctx); err != nil {
		return nil, nil, fmt.Errorf("%w: ensemble not whole before the fault: %w", ErrNoTarget, err)
	}
	if env.leaderless() {
		return c, nil, nil
	}
	l, err := cluster.Leader(ctx, c)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	return c, l, nil
}

// pickNode chooses a running server with the run's seeded source, in id
// order so a seed repeats its choice.
func pickNode(ctx context.Context, env *Env, c cluster.Cluster) (cluster.Node, error) {
	var up []cluster.Node
	for _, n := range c.Nodes() {
		if p, err := n.Process(ctx); err == nil && p.Running {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		return nil, fmt.Errorf("%w: no server running", ErrNoTarget)
	}
	slices.SortFunc(up, func(a, b cluster.Node) int { return a.ID() - b.ID() })
	return up[env.Rand.IntN(len(up))], nil
}

// targetOf names the server a single-server fault hits for the history
// (id, the backend's name of its process, address), marking the leader,
// whose loss is what makes the fault interesting; it returns the process
// it named, so the undo can tell whether it is still the same one.
func targetOf(ctx context.Context, n, leader cluster.Node) (cluster.Process, string, error) {
	p, err := n.Process(ctx)
	if err != nil {
		return p, "", fmt.Errorf("%w: n%d: %w", ErrNoTarget, n.ID(), err)
	}
	if !p.Running {
		return p, "", fmt.Errorf("%w: n%d is not running", ErrNoTarget, n.ID())
	}
	t := fmt.Sprintf("n%d (%s, %s)", n.ID(), p.Instance, n.ClientAddr())
	if leader != nil && n.ID() == leader.ID() {
		t += ", the leader"
	}
	return p, t, nil
}

// electionDetail watches for a new leader after a fault on the old one and
// says, as a suffix for the record, whether and when one was seen. Either
// way it is not an error: the fault itself was verified, the election is
// what it shows.
func electionDetail(ctx context.Context, c cluster.Cluster, old cluster.Node) string {
	saw, after, err := observe(ctx, c, effectWait, newLeader(old))
	if err != nil {
		return "; no new leader: " + err.Error()
	}
	return fmt.Sprintf("; %s after %s", saw, after.Round(time.Millisecond))
}

// effect is a condition on the servers' answers that shows a fault took
// hold; it returns what it saw.
type effect func(sts []cluster.NodeStatus) (string, bool)

// observe polls the servers until want holds or bound passes. It returns
// what was seen and when, or the last answers when nothing was.
func observe(ctx context.Context, c cluster.Cluster, bound time.Duration, want effect) (string, time.Duration, error) {
	start := time.Now()
	for {
		sts := cluster.Statuses(ctx, c, probeTimeout)
		if saw, ok := want(sts); ok {
			return saw, time.Since(start), nil
		}
		if time.Since(start) > bound {
			return "", time.Since(start), fmt.Errorf("not seen within %s (servers: %s)", bound, cluster.Summary(sts))
		}
		if !ctxsleep.Sleep(ctx, 100*time.Millisecond) {
			return "", time.Since(start), fmt.Errorf("stopped watching after %s: %w", time.Since(start).Round(time.Millisecond), ctx.Err())
		}
	}
}

// newLeader is seen when a server other than old leads.
func newLeader(old cluster.Node) effect {
	return func(sts []cluster.NodeStatus) (string, bool) {
		l := cluster.LeaderOf(sts)
		if l == nil || l.ID() == old.ID() {
			return "", false
		}
		return fmt.Sprintf("new leader: n%d -> n%d", old.ID(), l.ID()), true
	}
}

// stopsServing is seen when any of ids does not serve (not in a quorum,
// or no answer), or old no longer leads.
func stopsServing(old cluster.Node, ids []int) effect {
	lead := newLeader(old)
	return func(sts []cluster.NodeStatus) (string, bool) {
		if saw, ok := lead(sts); ok {
			return saw, true
		}
		for _, s := range sts {
			if slices.Contains(ids, s.Node.ID()) && (s.Err != nil || !s.Status.Serving) {
				return fmt.Sprintf("n%d stopped serving (cut from leader n%d)", s.Node.ID(), old.ID()), true
			}
		}
		return "", false
	}
}

// waitWhole waits until the ensemble serves again with every server, and
// says after how long and who leads.
func waitWhole(ctx context.Context, c cluster.Cluster) (string, error) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, healWait)
	defer cancel()
	if err := c.WaitReady(wctx); err != nil {
		return "", fmt.Errorf("ensemble not whole again: %w", err)
	}
	who := ""
	if l, err := cluster.Leader(ctx, c); err == nil {
		who = fmt.Sprintf(", leader n%d", l.ID())
	}
	return fmt.Sprintf("ensemble whole again after %s%s", time.Since(start).Round(time.Millisecond), who), nil
}

// healed ends an undo that has done its part: it waits for the whole
// ensemble, so the next fault starts from a healthy one, and adds how long
// that took to v.
func healed(ctx context.Context, c cluster.Cluster, v history.Value) (history.Value, error) {
	whole, err := waitWhole(ctx, c)
	if err != nil {
		return v, err
	}
	v.Detail += "; " + whole
	return v, nil
}
