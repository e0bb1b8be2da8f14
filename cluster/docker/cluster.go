// Package docker runs the ZooKeeper ensemble as containers through
// testcontainers-go: one container per server, from the image `chaos image
// build` makes (never pulled), on a Docker network of the run with static
// addresses in the harness's benchmark range. Every verb acts through the
// engine (signals, exec) and verifies its effect inside the container, so
// it works the same against any engine the client reaches.
//
// Everything the backend makes carries the run id as a label, which is
// how Cleanup finds a crashed run's leftovers (testcontainers-go's own
// reaper, Ryuk, would need an image pull and is disabled).
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
	"github.com/zkchaos/zkchaos/host/proc"
)

// Labels on every container and network of a run.
const (
	// LabelRun is the run id: what Cleanup removes by.
	LabelRun = "zkchaos.run"
	// LabelController is the controller's PID alone, as versions before
	// LabelOwners read it.
	LabelController = "zkchaos.controller"
	// LabelOwners is the run's controller and janitor (proc.Owners'
	// String), so a sweep can tell a leftover (both gone) from a run in
	// progress.
	LabelOwners = "zkchaos.owners"
	// LabelNode is the server id of a container.
	LabelNode = "zkchaos.node"
	// LabelLog is where a container's log is copied before it is removed,
	// by Close or, after a crash, by Cleanup.
	LabelLog = "zkchaos.log"
)

// Config describes the ensemble.
type Config struct {
	Nodes int
	// Dir is the run folder's sub-directory for the servers; n<i>/ in it
	// holds conf/, data/ and datalog/ (mounted at the official image's
	// /conf, /data and /datalog, so a killed container restarts with its
	// data) and zk.log (the container's output, copied at Close).
	Dir string
	// RunID labels everything made; required.
	RunID string
	// Owners are recorded in the labels (default: this process, no
	// janitor).
	Owners proc.Owners
	// Image is the tag to run (default: this machine's image.Detect tag).
	// It must exist: nothing is pulled.
	Image string
	// TickTime is ZooKeeper's time unit (default 200ms), as in
	// cluster/local.
	TickTime          time.Duration
	MaxSessionTimeout time.Duration
	ForceSync         bool
	Logger            *slog.Logger
}

func (c *Config) defaults(ctx context.Context) error {
	if c.Nodes < 1 || c.Nodes > maxServers {
		return fmt.Errorf("config: Nodes must be in 1..%d, got %d", maxServers, c.Nodes)
	}
	if c.Dir == "" {
		return errors.New("config: Dir is required")
	}
	if c.RunID == "" {
		return errors.New("config: RunID is required (it labels the containers and network)")
	}
	if c.Owners.Controller.PID == 0 {
		c.Owners = proc.Self()
	}
	if c.TickTime <= 0 {
		c.TickTime = 200 * time.Millisecond
	}
	if c.TickTime%time.Millisecond != 0 {
		return fmt.Errorf("config: TickTime %s is not whole milliseconds", c.TickTime)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Image == "" {
		spec, err := image.Detect(ctx)
		if err != nil {
			return fmt.Errorf("config: default image: %w", err)
		}
		c.Image = spec.Tag()
	}
	return nil
}

func (c *Config) labels() map[string]string {
	return map[string]string{LabelRun: c.RunID, LabelController: strconv.Itoa(c.Owners.Controller.PID), LabelOwners: c.Owners.String()}
}

// Cluster is an ensemble of containers. It implements cluster.Cluster.
type Cluster struct {
	cfg   Config
	cli   *testcontainers.DockerClient
	net   *Network
	nodes []*Node

	mu     sync.Mutex
	closed bool
}

var _ cluster.Cluster = (*Cluster)(nil)

// New checks the image, creates the run's network and one container per
// server (not started: Start does that). On error nothing it made is
// left.
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.defaults(ctx); err != nil {
		return nil, fmt.Errorf("new docker cluster: %w", err)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("new docker cluster: %w", err)
	}
	cfg.Dir = dir
	cli, err := engine.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("new docker cluster: %w", err)
	}
	c := &Cluster{cfg: cfg, cli: cli}
	if err := c.build(ctx); err != nil {
		if cerr := c.remove(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, cerr)
		}
		cli.Close()
		return nil, fmt.Errorf("new docker cluster: %w", err)
	}
	return c, nil
}

func (c *Cluster) build(ctx context.Context) error {
	if _, _, found, err := image.Lookup(ctx, c.cli, c.cfg.Image); err != nil {
		return err
	} else if !found {
		return fmt.Errorf("image %s not found: build it with `chaos image build` (images are never pulled)", c.cfg.Image)
	}
	nw, err := createNetwork(ctx, c.cli, "zkchaos-"+c.cfg.RunID, c.cfg.labels())
	if err != nil {
		return err
	}
	c.net = nw
	for i := 1; i <= c.cfg.Nodes; i++ {
		d := filepath.Join(c.cfg.Dir, fmt.Sprintf("n%d", i))
		c.nodes = append(c.nodes, &Node{id: i, c: c, dir: d, ip: serverAddr(nw.Subnet, i).String(), logPath: filepath.Join(d, "zk.log")})
	}
	for _, n := range c.nodes {
		if err := n.create(ctx); err != nil {
			return err
		}
	}
	c.cfg.Logger.Info("docker ensemble created", "network", nw.Name, "subnet", nw.Subnet, "bridge", nw.Bridge, "image", c.cfg.Image)
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

// Node returns server id (1-based) with its concrete type.
func (c *Cluster) Node(id int) *Node {
	if id < 1 || id > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

// Network is the run's Docker network.
func (c *Cluster) Network() Network { return *c.net }

// ConnectString is the comma-separated client addresses.
func (c *Cluster) ConnectString() string { return cluster.JoinAddrs(c.Nodes()) }

// Capabilities: every server verb. Pauses are signals through the engine,
// kills leave the data mounted for the restart, and partitions are
// iptables rules inside each container (NET_ADMIN).
func (c *Cluster) Capabilities() cluster.Capabilities { return Capabilities() }

// Capabilities is what a docker ensemble can do, known before one is made.
func Capabilities() cluster.Capabilities { return cluster.Capabilities{Backend: "docker"} }

// Start starts every server's container.
func (c *Cluster) Start(ctx context.Context) error { return cluster.StartAll(ctx, c.Nodes()) }

// WaitReady polls srvr on every server until one leader and N−1
// followers serve (one server: standalone).
func (c *Cluster) WaitReady(ctx context.Context) error {
	return cluster.WaitReady(ctx, c, c.cfg.Logger)
}

// Restore undoes whatever faults are left on the ensemble (see
// cluster.RestoreAll): rules inside the containers, stopped JVMs, exited
// containers (started again with their data).
func (c *Cluster) Restore(ctx context.Context) ([]string, error) {
	return cluster.RestoreAll(ctx, c.Nodes())
}

// Close resumes paused servers, stops them, copies each container's log
// into its LogPath, and removes the containers and the network; the data
// stays in Dir. It is idempotent.
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
	errs = append(errs, c.remove(ctx))
	c.cli.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close docker cluster: %w", err)
	}
	c.cfg.Logger.Info("docker ensemble removed", "network", c.netName())
	return nil
}

func (c *Cluster) netName() string {
	if c.net == nil {
		return ""
	}
	return c.net.Name
}

// remove copies the logs and removes the containers, then the network.
func (c *Cluster) remove(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.remove(ctx))
	}
	if c.net != nil {
		errs = append(errs, removeNetwork(ctx, c.cli, c.net.ID))
	}
	return errors.Join(errs...)
}

// Dir is the absolute directory holding the servers' files.
func (c *Cluster) Dir() string { return c.cfg.Dir }
