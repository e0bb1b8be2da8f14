package netns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// hostChain is the chain in every host namespace that partition faults
// fill; INPUT and OUTPUT jump to it, so flushing it heals the host.
const hostChain = "ZKCHAOS"

// Host is one namespace on a Network.
type Host struct {
	Name string
	NS   string // namespace name, zkc<s>-<name>
	IP   string

	vethRoot, vethNS string
	// removing is true while RemoveHost runs (see goneAfterRemoval).
	removing atomic.Bool
}

// Command runs name inside the host's namespace. ip netns exec execs the
// program in place, so cmd.Process.Pid is the program's own PID (the one
// to pause, kill or find in /proc), not a wrapper's.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Block drops all traffic between the host and the given peer IPs, in both
// directions, by rules in the host's own namespace. Cutting both directions
// at one end is enough for a partition and keeps a fault to one namespace.
func (h *Host) Block(ctx context.Context, peers ...string) error {
	for _, p := range peers {
		if _, err := netip.ParseAddr(p); err != nil {
			return fmt.Errorf("block %s on host %s: not an IP address", p, h.Name)
		}
		for _, dir := range []string{"-s", "-d"} {
			if _, err := h.iptables(ctx, "-A", hostChain, dir, p, "-j", "DROP"); err != nil {
				return fmt.Errorf("block %s on host %s: %w", p, h.Name, err)
			}
		}
	}
	return nil
}

// BlockPort drops all TCP traffic to and from the host's port, whoever
// the peer (the controller's probes included): a server cut from all its
// clients. Heal removes it with the other blocks.
func (h *Host) BlockPort(ctx context.Context, port int) error {
	p := fmt.Sprint(port)
	for _, dir := range []string{"--dport", "--sport"} {
		if _, err := h.iptables(ctx, "-A", hostChain, "-p", "tcp", dir, p, "-j", "DROP"); err != nil {
			return fmt.Errorf("block port %s on host %s: %w", p, h.Name, err)
		}
	}
	return nil
}

// Heal removes every block of the host. A host whose namespace is gone
// (its worker exited and the namespace was removed meanwhile) has nothing
// left to heal.
func (h *Host) Heal(ctx context.Context) error {
	if _, err := h.iptables(ctx, "-F", hostChain); err != nil {
		if h.Gone() {
			return nil
		}
		return fmt.Errorf("heal host %s: %w", h.Name, err)
	}
	return nil
}

// Gone reports whether the host's namespace no longer exists. Worker
// namespaces are removed as their processes exit, concurrently with a
// final sweep over the hosts; such a host has no rules, which is not an
// error.
func (h *Host) Gone() bool {
	_, err := os.Stat(filepath.Join("/run/netns", h.NS))
	return errors.Is(err, os.ErrNotExist)
}

// goneAfterRemoval is Gone for a look at the rules that failed: RemoveHost
// kills everything in the namespace before it deletes it, that look too,
// which then fails while the namespace still exists. So a removal in
// progress is waited for (it is bounded by its own context, and this wait
// by ctx) before the namespace is looked at. Only Rules waits: it is the
// look that says whether anything is left (a run's final restore, a
// heal's check). A failed Heal is its caller's to retry (the nemesis's
// heal does, then finds the host gone), and the restore heals only a host
// whose rules it has seen.
func (h *Host) goneAfterRemoval(ctx context.Context) bool {
	for h.removing.Load() && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return h.Gone()
}

func (h *Host) iptables(ctx context.Context, args ...string) (string, error) {
	pre := append([]string{"netns", "exec", h.NS, "iptables"}, lockWait(ctx)...)
	return run(ctx, "ip", append(pre, args...)...)
}

// Rules lists the host's blocks as iptables prints them (-A ZKCHAOS ...),
// so a fault can record the rules it made and a heal can show none remain.
func (h *Host) Rules(ctx context.Context) ([]string, error) {
	out, err := h.iptables(ctx, "-S", hostChain)
	if err != nil {
		if h.goneAfterRemoval(ctx) {
			return nil, nil
		}
		return nil, fmt.Errorf("rules of host %s: %w", h.Name, err)
	}
	var rules []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-A ") {
			rules = append(rules, l)
		}
	}
	return rules, nil
}
