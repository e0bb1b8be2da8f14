package docker

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	tcexec "github.com/testcontainers/testcontainers-go/exec"

	"github.com/zkchaos/zkchaos/cluster"
	iptchain "github.com/zkchaos/zkchaos/cluster/chain"
)

// chain is the container's partition chain; INPUT and OUTPUT jump to it,
// so flushing it heals the server. The same name as in the local
// backend's namespaces.
const chain = "ZKCHAOS"

// exec runs cmd in the container as root (the JVM may run as another
// user; iptables needs root and the container's NET_ADMIN) and returns
// its output, or an error with it when it exits non-zero. An exec works
// while PID 1 is stopped by SIGSTOP (docker pause would block it).
func (n *Node) exec(ctx context.Context, cmd ...string) (string, error) {
	code, r, err := n.ctr.Exec(ctx, cmd, tcexec.Multiplexed(), tcexec.WithUser("0"))
	if err != nil {
		return "", fmt.Errorf("exec %q in zk node %d: %w", strings.Join(cmd, " "), n.id, err)
	}
	b, err := io.ReadAll(r)
	out := strings.TrimSpace(string(b))
	if err != nil {
		return out, fmt.Errorf("exec %q in zk node %d: read output: %w", strings.Join(cmd, " "), n.id, err)
	}
	if code != 0 {
		return out, fmt.Errorf("exec %q in zk node %d: exit %d: %s", strings.Join(cmd, " "), n.id, code, out)
	}
	return out, nil
}

// procState is the state of the container's PID 1 as ps inside it reports
// (R, S, T for stopped, ...).
func (n *Node) procState(ctx context.Context) (string, error) {
	out, err := n.exec(ctx, "ps", "-o", "stat=", "-p", "1")
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("zk node %d: ps shows no PID 1", n.id)
	}
	return out, nil
}

// Pause sends SIGSTOP to the JVM, the container's PID 1, through the
// engine (docker kill -s STOP: not docker pause, which freezes the whole
// container's cgroup and blocks exec), and returns once ps inside the
// container shows it stopped, so that a pause recorded really happened.
func (n *Node) Pause(ctx context.Context) (string, error) {
	v, err := n.sendAndWait(ctx, "STOP", true)
	if err != nil {
		return "", fmt.Errorf("pause zk node %d: %w", n.id, err)
	}
	return v, nil
}

// Resume sends SIGCONT and returns once the JVM no longer shows stopped.
func (n *Node) Resume(ctx context.Context) (string, error) {
	v, err := n.sendAndWait(ctx, "CONT", false)
	if err != nil {
		return "", fmt.Errorf("resume zk node %d: %w", n.id, err)
	}
	return v, nil
}

// sendAndWait signals PID 1 through the engine and waits until ps inside
// the container shows it stopped (or not), and says what it saw.
func (n *Node) sendAndWait(ctx context.Context, sig string, stopped bool) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.state(ctx)
	if err != nil {
		return "", err
	}
	if !st.Running {
		return "", fmt.Errorf("not running (container %s)", st.Status)
	}
	start := time.Now()
	if err := n.signal(ctx, sig); err != nil {
		return "", err
	}
	var ps string
	err = waitUntil(ctx, signalWait, func(ctx context.Context) (bool, error) {
		s, err := n.procState(ctx)
		ps = s
		return err == nil && strings.HasPrefix(s, "T") == stopped, err
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("SIG%s through the engine; ps in container %s shows PID 1 state %s after %s",
		sig, n.name(), ps, time.Since(start).Round(time.Millisecond)), nil
}

// Isolate drops all traffic between the server and peers, both
// directions, by rules in the container's own network namespace, and
// checks that iptables lists them. The rules live as long as the
// container's network namespace: a restart (Kill, Start) begins with none.
func (n *Node) Isolate(ctx context.Context, peers []cluster.Node) (string, error) {
	ips := make([]string, 0, len(peers))
	for _, p := range peers {
		ips = append(ips, cluster.Host(p))
	}
	script, want, err := iptchain.Isolate(chain, ips)
	if err != nil {
		return "", fmt.Errorf("isolate zk node %d: %w", n.id, err)
	}
	if _, err := n.exec(ctx, "sh", "-ec", script); err != nil {
		return "", fmt.Errorf("isolate zk node %d: %w", n.id, err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("isolate zk node %d: %w", n.id, err)
	}
	for _, w := range want {
		if !slices.Contains(rules, w) {
			return "", fmt.Errorf("isolate zk node %d: rule %q not listed after adding it (rules: %q)", n.id, w, rules)
		}
	}
	return fmt.Sprintf("iptables in container %s: %s", n.name(), strings.Join(rules, " | ")), nil
}

// Heal flushes the server's partition chain and checks that none remain.
// A container not running has no rules (its network namespace went with
// it).
func (n *Node) Heal(ctx context.Context) (string, error) {
	st, err := n.state(ctx)
	if err != nil {
		return "", fmt.Errorf("heal %w", err)
	}
	if !st.Running {
		return fmt.Sprintf("container %s not running: its rules went with its network namespace", n.name()), nil
	}
	if _, err := n.exec(ctx, "sh", "-ec", iptchain.Flush(chain)); err != nil {
		return "", fmt.Errorf("heal zk node %d: %w", n.id, err)
	}
	rules, err := n.Rules(ctx)
	if err != nil {
		return "", fmt.Errorf("heal zk node %d: %w", n.id, err)
	}
	if len(rules) > 0 {
		return "", fmt.Errorf("heal zk node %d: rules left after flush: %q", n.id, rules)
	}
	return fmt.Sprintf("iptables in container %s lists no rules", n.name()), nil
}

// Rules lists the server's partition rules as iptables prints them (-A
// ZKCHAOS ...), for the record. The whole table is listed because
// iptables-nft answers -S of a missing chain with a misleading error.
func (n *Node) Rules(ctx context.Context) ([]string, error) {
	st, err := n.state(ctx)
	if err != nil {
		return nil, fmt.Errorf("rules %w", err)
	}
	if !st.Running {
		return nil, nil
	}
	out, err := n.exec(ctx, "iptables", "-w", "-S")
	if err != nil {
		return nil, fmt.Errorf("rules of zk node %d: %w", n.id, err)
	}
	return iptchain.Rules(out, chain), nil
}
