// Package external is the backend of an ensemble the user already runs
// (--cluster external --zk host:port,...): the harness reaches its
// servers as a client does and nothing more. It never starts, stops,
// signals or partitions them, so every server verb is unsupported and only
// client-side faults can run against it. Workers in network namespaces
// reach the servers through relays the controller runs on the run's
// bridge (cluster/relay), each dialling exactly one address the user named.
package external

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/relay"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Name is the backend's --cluster value.
const Name = "external"

// RootBase is the znode under which every run against an external
// ensemble keeps its own subtree, RunRoot(runID): runs sharing an
// ensemble, and what a killed run left, never meet.
const RootBase = "/zkchaos"

// RunRoot is the run's own subtree: the lock root goes beneath it, and
// the run removes it whole at its end.
func RunRoot(runID string) string { return RootBase + "/" + runID }

// ParseAddrs reads a --zk value: comma-separated host:port client
// addresses, at least one, each with a host and a port 1..65535, none
// twice.
func ParseAddrs(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("%q: not host:port: %w", a, err)
		}
		if host == "" {
			return nil, fmt.Errorf("%q: no host", a)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("%q: port %q is not 1..65535", a, port)
		}
		if seen[a] {
			return nil, fmt.Errorf("%q given twice", a)
		}
		seen[a] = true
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("no address: give the ensemble's client addresses as host:port, comma-separated")
	}
	return out, nil
}

// why is the reason every server verb is missing, for the validation
// message that refuses a server fault.
func why() string {
	return "the ensemble is the user's own (" + setting.Name("Cluster") + " " + Name + "): the harness never starts, stops, signals or partitions its servers; only client-side faults run against it"
}

// Capabilities: none of the server verbs.
func Capabilities() cluster.Capabilities {
	return cluster.Capabilities{Backend: Name, Lacks: map[cluster.Capability]string{
		cluster.CanPause: why(), cluster.CanKill: why(), cluster.CanPartition: why()}}
}

// probeTimeout bounds one reachability probe of one address.
const probeTimeout = 3 * time.Second

// Probe checks that every address answers as a ZooKeeper server before a
// run makes anything: a TCP connection, then srvr. A server that refuses
// the word (not in its 4lw.commands.whitelist) still proved it is there;
// one that is up but not serving is not ready for a run. The error names
// the address.
func Probe(ctx context.Context, addrs []string) error {
	var errs []error
	for _, a := range addrs {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := cluster.Srvr(pctx, a)
		cancel()
		if err != nil && !errors.Is(err, cluster.ErrNotAllowed) {
			errs = append(errs, fmt.Errorf("ZooKeeper at %s: %w", a, err))
		}
	}
	return errors.Join(errs...)
}

// Config describes the external ensemble of a run.
type Config struct {
	// Addrs are the servers' client addresses, as the user gave them.
	Addrs []string
	// RelayHost, when set, is the address on the run's bridge where a
	// relay per server listens for the workers in namespaces ("": the
	// run's processes reach Addrs themselves, loopback mode).
	RelayHost string
	Logger    *slog.Logger
}

// Cluster is the user's ensemble. It implements cluster.Cluster.
type Cluster struct {
	nodes  []*Node
	relays []*relay.Relay
	mu     sync.Mutex
	closed bool
}

var _ cluster.Cluster = (*Cluster)(nil)

// New starts the relays (with RelayHost) and returns the ensemble; no
// server is touched.
func New(cfg Config) (*Cluster, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{}
	for i, a := range cfg.Addrs {
		n := &Node{id: i + 1, target: a, addr: a}
		if cfg.RelayHost != "" {
			r, err := relay.Start(cfg.RelayHost, a, log)
			if err != nil {
				c.closeRelays()
				return nil, fmt.Errorf("external ensemble: relay to %s: %w", a, err)
			}
			c.relays = append(c.relays, r)
			n.addr = r.Addr()
			log.Info("relay for the workers", "node", n.id, "listen", n.addr, "server", a)
		}
		c.nodes = append(c.nodes, n)
	}
	return c, nil
}

// Nodes implements cluster.Cluster.
func (c *Cluster) Nodes() []cluster.Node {
	out := make([]cluster.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n
	}
	return out
}

// ConnectString is what the run's processes connect to: the relays when
// there are any, else the user's addresses.
func (c *Cluster) ConnectString() string { return cluster.JoinAddrs(c.Nodes()) }

// Capabilities implements cluster.Cluster.
func (c *Cluster) Capabilities() cluster.Capabilities { return Capabilities() }

// Start starts nothing: the servers are the user's and already run.
func (c *Cluster) Start(context.Context) error { return nil }

// WaitReady returns when every address serves: srvr says leader,
// follower, observer or standalone, or the server refuses srvr (it
// answered, and a session will tell the rest). It does not ask for one
// leader among the addresses: the user may name part of an ensemble.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for {
		var waiting []string
		for _, n := range c.nodes {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := cluster.Srvr(sctx, n.addr)
			cancel()
			if err != nil && !errors.Is(err, cluster.ErrNotAllowed) {
				waiting = append(waiting, fmt.Sprintf("%s: %v", n.target, err))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("external ensemble not serving: %s: %w", strings.Join(waiting, "; "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Restore has nothing to undo: no fault ever touches these servers.
func (c *Cluster) Restore(context.Context) ([]string, error) { return nil, nil }

// Close stops the relays; the servers are left as they were.
func (c *Cluster) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.closeRelays()
	return nil
}

func (c *Cluster) closeRelays() {
	for _, r := range c.relays {
		r.Close()
	}
}

// Node is one server the user named.
type Node struct {
	id int
	// target is the user's address; addr is where the run's processes
	// connect (a relay to target, or target itself).
	target, addr string
}

var _ cluster.Node = (*Node)(nil)

// ID implements cluster.Node: the position in --zk, from 1.
func (n *Node) ID() int { return n.id }

// ClientAddr is where the run's processes reach the server.
func (n *Node) ClientAddr() string { return n.addr }

// Target is the server's address as the user gave it.
func (n *Node) Target() string { return n.target }

// LogPath is empty: the server's log is the user's.
func (n *Node) LogPath() string { return "" }

// Process is unknown: the server's process is not the harness's to see.
func (n *Node) Process(context.Context) (cluster.Process, error) {
	return cluster.Process{}, cluster.ErrUnsupported
}

// Status asks the server (srvr); a server that does not allow srvr gives
// cluster.ErrNotAllowed.
func (n *Node) Status(ctx context.Context) (cluster.Status, error) { return cluster.Srvr(ctx, n.addr) }

// Rules: the harness makes none on these servers.
func (n *Node) Rules(context.Context) ([]string, error) { return nil, nil }

func (n *Node) unsupported(verb string) error {
	return fmt.Errorf("%s server %s (%s): %w", verb, n.target, why(), cluster.ErrUnsupported)
}

// Start implements cluster.Node: unsupported.
func (n *Node) Start(context.Context) (string, error) { return "", n.unsupported("start") }

// Stop implements cluster.Node: unsupported.
func (n *Node) Stop(context.Context) error { return n.unsupported("stop") }

// Kill implements cluster.Node: unsupported.
func (n *Node) Kill(context.Context) (string, error) { return "", n.unsupported("kill") }

// Pause implements cluster.Node: unsupported.
func (n *Node) Pause(context.Context) (string, error) { return "", n.unsupported("pause") }

// Resume implements cluster.Node: unsupported.
func (n *Node) Resume(context.Context) (string, error) { return "", n.unsupported("resume") }

// Isolate implements cluster.Node: unsupported.
func (n *Node) Isolate(context.Context, []cluster.Node) (string, error) {
	return "", n.unsupported("isolate")
}

// Heal implements cluster.Node: nothing was ever isolated.
func (n *Node) Heal(context.Context) (string, error) { return "nothing to heal", nil }
