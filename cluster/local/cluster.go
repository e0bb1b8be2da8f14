package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Cluster is a service's servers as local processes (an ensemble of JVMs
// by default). It implements cluster.Cluster.
type Cluster struct {
	cfg   Config
	nodes []*Node
	ports []int
	// archive is the ZooKeeper JVMs' class archive (archive.go).
	archive *classArchive
	mu      sync.Mutex
	closed  bool
}

var _ cluster.Cluster = (*Cluster)(nil)

// New writes every server's configuration and, in netns mode, creates the
// hosts n1..nN on cfg.Network. Nothing runs until Start.
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("new local cluster: %w", err)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("new local cluster: %w", err)
	}
	cfg.Dir = dir
	c := &Cluster{cfg: cfg}
	if err := c.build(ctx); err != nil {
		if cerr := c.removeHosts(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, cerr)
		}
		releasePorts(c.ports...)
		return nil, fmt.Errorf("new local cluster: %w", err)
	}
	if _, zk := cfg.Program.(ZooKeeper); zk {
		c.archive = prepareArchive(ctx, &c.cfg)
	}
	return c, nil
}

// Launch is New, Start and WaitReady in one, for callers that want a
// serving ensemble or none at all: on failure it closes what it started, so
// no JVM outlives the error. ctx bounds the start and the wait, not that
// close.
func Launch(ctx context.Context, cfg Config) (*Cluster, error) {
	c, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	err = c.Start(ctx)
	if err == nil {
		err = c.WaitReady(ctx)
	}
	if err != nil {
		if cerr := c.Close(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close cluster: %w", cerr))
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) build(ctx context.Context) error {
	prog := c.cfg.Program
	per := len(prog.Ports())
	if c.cfg.Network == nil {
		ps, err := freePorts(per * c.cfg.Nodes)
		if err != nil {
			return err
		}
		c.ports = ps
	}
	for i := 1; i <= c.cfg.Nodes; i++ {
		d := filepath.Join(c.cfg.Dir, fmt.Sprintf("n%d", i))
		n := &Node{id: i, c: c, dir: d, logPath: filepath.Join(d, prog.Name()+".log")}
		if c.cfg.Network != nil {
			h, err := c.cfg.Network.AddHost(ctx, fmt.Sprintf("n%d", i))
			if err != nil {
				return fmt.Errorf("%s node %d: %w", prog.Name(), i, err)
			}
			n.host, n.ip, n.ports = h, h.IP, prog.Ports()
		} else {
			n.ip, n.ports = "127.0.0.1", c.ports[per*(i-1):per*i]
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("%s node %d: %w", prog.Name(), i, err)
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		if err := prog.Configure(n, c.nodes); err != nil {
			return err
		}
	}
	return nil
}

// Nodes returns the servers in id order.
func (c *Cluster) Nodes() []cluster.Node {
	out := make([]cluster.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n
	}
	return out
}

// Node returns server id (1-based) with its concrete type, for what only
// local nodes offer (Host, IP, Exited).
func (c *Cluster) Node(id int) *Node {
	if id < 1 || id > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

// ConnectString is the comma-separated client addresses.
func (c *Cluster) ConnectString() string { return cluster.JoinAddrs(c.Nodes()) }

// Capabilities: every verb in netns mode; in loopback mode the servers
// share 127.0.0.1, so there is no traffic between them to cut.
func (c *Cluster) Capabilities() cluster.Capabilities { return Capabilities(c.cfg.Network != nil) }

// Capabilities is what a local ensemble can do, with or without network
// namespaces, known before one is made (a run validates its faults
// against it before anything starts).
func Capabilities(netns bool) cluster.Capabilities {
	cs := cluster.Capabilities{Backend: "local"}
	if !netns {
		cs.Lacks = map[cluster.Capability]string{
			cluster.CanPartition: "in loopback mode (" + setting.Name("Net") + " loopback, or no network namespaces here) every server shares 127.0.0.1",
		}
	}
	return cs
}

// Start starts every server.
func (c *Cluster) Start(ctx context.Context) error { return cluster.StartAll(ctx, c.Nodes()) }

// WaitReady polls every server's status until the program calls them
// ready (ZooKeeper: exactly one leader and N−1 followers; a single
// server: standalone or leader). On ctx's end the error lists each
// server's last status.
//
// A server of another program than ZooKeeper that exits meanwhile ends
// the wait at once, with the end of its log: a redis-server or etcd that
// cannot start (a bad binary, a port taken) is said in a second, not
// after the whole wait.
func (c *Cluster) WaitReady(ctx context.Context) error {
	name := c.cfg.Program.Name()
	if _, zk := c.cfg.Program.(ZooKeeper); zk {
		return cluster.WaitReadyFor(ctx, c, name, c.cfg.Program.Ready, c.cfg.Logger)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go c.watchExits(wctx, cancel)
	err := cluster.WaitReadyFor(wctx, c, name, c.cfg.Program.Ready, c.cfg.Logger)
	if cause := context.Cause(wctx); err != nil && cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// watchExits ends ctx with an error when a started server has exited.
func (c *Cluster) watchExits(ctx context.Context, fail context.CancelCauseFunc) {
	for {
		for _, n := range c.nodes {
			if exited, why := n.Exited(); exited {
				fail(fmt.Errorf("%s exited while starting (%v): %s", n.name(), why, lastLines(n.logPath, 3)))
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastLines is the end of a server's log, for an error message.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log: " + err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Restore undoes whatever faults are left on the ensemble (see
// cluster.RestoreAll).
func (c *Cluster) Restore(ctx context.Context) ([]string, error) {
	return cluster.RestoreAll(ctx, c.Nodes())
}

// Close stops every server (resuming paused ones first) and removes the
// hosts New created; logs and data stay in Dir. It is idempotent.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { errs[i] = n.Stop(ctx) })
	}
	wg.Wait()
	if len(c.nodes) > 0 {
		c.archive.finish(c.nodes[0], c.cfg.Logger)
	}
	errs = append(errs, c.removeHosts(ctx))
	releasePorts(c.ports...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close local cluster: %w", err)
	}
	return nil
}

func (c *Cluster) removeHosts(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		if n.host != nil {
			errs = append(errs, c.cfg.Network.RemoveHost(ctx, n.host))
		}
	}
	return errors.Join(errs...)
}

// Dir is the absolute directory holding the servers' files.
func (c *Cluster) Dir() string { return c.cfg.Dir }
