package local

import (
	"context"
	"fmt"
	"strings"

	"github.com/zkchaos/zkchaos/cluster"
)

// Isolate drops all traffic between the server and peers by rules in the
// server's own namespace; in loopback mode every server shares one
// address, so there is nothing to cut and it says so.
// It returns the rules iptables lists afterwards, which is the check.
func (n *Node) Isolate(ctx context.Context, peers []cluster.Node) (string, error) {
	if n.host == nil {
		return "", fmt.Errorf("isolate zk node %d: %w (loopback mode has no per-server network)", n.id, cluster.ErrUnsupported)
	}
	ips := make([]string, 0, len(peers))
	for _, p := range peers {
		ips = append(ips, cluster.Host(p))
	}
	if err := n.host.Block(ctx, ips...); err != nil {
		return "", fmt.Errorf("isolate zk node %d: %w", n.id, err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("isolate zk node %d: %w", n.id, err)
	}
	if len(rules) == 0 {
		return "", fmt.Errorf("isolate zk node %d: no rules listed after adding them", n.id)
	}
	return "iptables in " + n.host.Name + ": " + strings.Join(rules, " | "), nil
}

// Heal removes every block of the server; in loopback mode there are none.
func (n *Node) Heal(ctx context.Context) (string, error) {
	if n.host == nil {
		return "no per-server network, no rules", nil
	}
	if err := n.host.Heal(ctx); err != nil {
		return "", fmt.Errorf("heal zk node %d: %w", n.id, err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("heal zk node %d: %w", n.id, err)
	}
	if len(rules) > 0 {
		return "", fmt.Errorf("heal zk node %d: rules left: %s", n.id, strings.Join(rules, " | "))
	}
	return "iptables in " + n.host.Name + " lists no rules", nil
}

// Rules lists the server's blocks as iptables shows them, for the record.
func (n *Node) Rules(ctx context.Context) ([]string, error) {
	if n.host == nil {
		return nil, nil
	}
	return n.host.Rules(ctx)
}
