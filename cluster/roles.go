package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// NodeStatus is one server's answer to srvr, or why it gave none.
type NodeStatus struct {
	Node   Node
	Status Status
	Err    error
}

// Statuses asks every server at once, each bounded by per, because a
// paused or cut-off server does not answer and must not delay the others'
// answers (they are what shows a fault's effect).
func Statuses(ctx context.Context, c Cluster, per time.Duration) []NodeStatus {
	nodes := c.Nodes()
	out := make([]NodeStatus, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, per)
			defer cancel()
			st, err := n.Status(sctx)
			out[i] = NodeStatus{Node: n, Status: st, Err: err}
		})
	}
	wg.Wait()
	return out
}

// LeaderOf returns the one server that says it leads, or nil when none or
// several do (mid-election both happen, and neither is a leader to aim at).
func LeaderOf(sts []NodeStatus) Node {
	var l Node
	for _, s := range sts {
		if s.Err == nil && s.Status.Serving && (s.Status.Mode == "leader" || s.Status.Mode == "standalone") {
			if l != nil {
				return nil
			}
			l = s.Node
		}
	}
	return l
}

// Leader asks every server and returns the leader.
func Leader(ctx context.Context, c Cluster) (Node, error) {
	sts := Statuses(ctx, c, time.Second)
	if l := LeaderOf(sts); l != nil {
		return l, nil
	}
	return nil, fmt.Errorf("no single leader: %s", Summary(sts))
}

// Summary is the statuses in one line, for logs and the history.
func Summary(sts []NodeStatus) string {
	s := ""
	for i, st := range sts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("n%d ", st.Node.ID())
		switch {
		case st.Err != nil:
			s += "no answer"
		case !st.Status.Serving:
			s += "not serving"
		default:
			s += st.Status.Mode
		}
	}
	return s
}

// Host is the IP of a node's client address: its own address on a
// per-server network, which is what partitions cut.
func Host(n Node) string {
	h, _, err := net.SplitHostPort(n.ClientAddr())
	if err != nil {
		return n.ClientAddr()
	}
	return h
}

// WaitServing waits until the server answers srvr as a member of a quorum
// (leader, follower or standalone), or ctx ends.
func WaitServing(ctx context.Context, n Node) (Status, error) {
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := n.Status(sctx)
		cancel()
		if err == nil && st.Serving {
			return st, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("not serving")
			}
			return st, fmt.Errorf("zk node %d: %w: %w", n.ID(), err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Refuses checks, after a server was killed, that its address no longer
// answers srvr (within a short bound: a killed server refuses at once),
// and says what answered otherwise.
func Refuses(ctx context.Context, n Node) error {
	pctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	if st, err := n.Status(pctx); err == nil {
		return fmt.Errorf("%s still answers srvr (mode %q)", n.ClientAddr(), st.Mode)
	}
	return nil
}
