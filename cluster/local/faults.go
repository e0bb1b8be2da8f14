package local

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
)

// Isolate drops all traffic between the server and peers by rules in the
// server's own namespace; in loopback mode every server shares one
// address, so there is nothing to cut and it says so.
// It returns the rules iptables lists afterwards, which is the check.
func (n *Node) Isolate(ctx context.Context, peers []cluster.Node) (string, error) {
	if n.host == nil {
		return "", fmt.Errorf("isolate %s: %w (loopback mode has no per-server network)", n.name(), cluster.ErrUnsupported)
	}
	ips := make([]string, 0, len(peers))
	for _, p := range peers {
		ips = append(ips, cluster.Host(p))
	}
	if err := n.host.Block(ctx, ips...); err != nil {
		return "", fmt.Errorf("isolate %s: %w", n.name(), err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("isolate %s: %w", n.name(), err)
	}
	if len(rules) == 0 {
		return "", fmt.Errorf("isolate %s: no rules listed after adding them", n.name())
	}
	return "iptables in " + n.host.Name + ": " + strings.Join(rules, " | "), nil
}

// Heal removes every block of the server; in loopback mode there are none.
func (n *Node) Heal(ctx context.Context) (string, error) {
	if n.host == nil {
		return "no per-server network, no rules", nil
	}
	if err := n.host.Heal(ctx); err != nil {
		return "", fmt.Errorf("heal %s: %w", n.name(), err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("heal %s: %w", n.name(), err)
	}
	if len(rules) > 0 {
		return "", fmt.Errorf("heal %s: rules left: %s", n.name(), strings.Join(rules, " | "))
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

// CutClients drops all traffic to and from the server's client port, so
// that no client (nor the controller's probe) reaches it while it runs on:
// the partition of a service whose servers do not talk to each other
// (redis). It returns the rules iptables lists and that the probe failed.
func (n *Node) CutClients(ctx context.Context) (string, error) {
	if n.host == nil {
		return "", fmt.Errorf("cut %s from its clients: %w (loopback mode has no per-server network)", n.name(), cluster.ErrUnsupported)
	}
	if err := n.host.BlockPort(ctx, n.ports[0]); err != nil {
		return "", fmt.Errorf("cut %s from its clients: %w", n.name(), err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("cut %s from its clients: %w", n.name(), err)
	}
	pctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	if _, err := n.Status(pctx); err == nil {
		return "", fmt.Errorf("cut %s from its clients: it still answers %s at %s", n.name(), n.c.cfg.Program.Probe(), n.ClientAddr())
	}
	return fmt.Sprintf("iptables in %s: %s; %s to %s unanswered", n.host.Name, strings.Join(rules, " | "), n.c.cfg.Program.Probe(), n.ClientAddr()), nil
}
