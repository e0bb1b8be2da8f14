package local

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/proc"
)

// Isolate drops all traffic between the server and peers by rules in the
// server's own namespace; in loopback mode every server shares one
// address, so there is nothing to cut and it says so.
func (n *Node) Isolate(ctx context.Context, peers []cluster.Node) error {
	if n.host == nil {
		return fmt.Errorf("isolate zk node %d: %w (loopback mode has no per-server network)", n.id, cluster.ErrUnsupported)
	}
	ips := make([]string, 0, len(peers))
	for _, p := range peers {
		ips = append(ips, cluster.Host(p))
	}
	if err := n.host.Block(ctx, ips...); err != nil {
		return fmt.Errorf("isolate zk node %d: %w", n.id, err)
	}
	return nil
}

// Heal removes every block of the server; in loopback mode there are none.
func (n *Node) Heal(ctx context.Context) error {
	if n.host == nil {
		return nil
	}
	if err := n.host.Heal(ctx); err != nil {
		return fmt.Errorf("heal zk node %d: %w", n.id, err)
	}
	return nil
}

// Rules lists the server's blocks as iptables shows them, for the record.
func (n *Node) Rules(ctx context.Context) ([]string, error) {
	if n.host == nil {
		return nil, nil
	}
	return n.host.Rules(ctx)
}

// Restore undoes whatever faults are left on the ensemble, whoever made
// them: it heals every server's partitions, resumes paused servers and
// restarts dead ones with their data. It does not wait for the ensemble to
// serve (WaitReady does), and returns one line per thing it had to do, so
// that a fault the nemesis failed to undo still shows in the record.
func (c *Cluster) Restore(ctx context.Context) ([]string, error) {
	var did []string
	var errs []error
	for _, n := range c.nodes {
		if rules, err := n.Rules(ctx); err != nil {
			errs = append(errs, err)
		} else if len(rules) > 0 {
			if err := n.Heal(ctx); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, fmt.Sprintf("n%d: removed %d rules (%s)", n.id, len(rules), strings.Join(rules, "; ")))
			}
		}
		if pid := n.PID(); pid != 0 && proc.Stopped(pid) {
			if err := proc.Resume(pid, signalWait); err != nil {
				errs = append(errs, fmt.Errorf("resume zk node %d: %w", n.id, err))
			} else {
				n.mu.Lock()
				n.paused = false
				n.mu.Unlock()
				did = append(did, fmt.Sprintf("n%d: resumed pid %d", n.id, pid))
			}
		}
		if exited, _ := n.Exited(); exited {
			if err := n.Start(ctx); err != nil {
				errs = append(errs, err)
			} else {
				did = append(did, fmt.Sprintf("n%d: restarted as pid %d", n.id, n.PID()))
			}
		}
	}
	return did, errors.Join(errs...)
}
