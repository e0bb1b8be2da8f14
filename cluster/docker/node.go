package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/zkjvm"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL, as in
// cluster/local.
const stopGrace = 10 * time.Second

// signalWait bounds how long Pause, Resume and Kill wait for the effect to
// show.
const signalWait = 5 * time.Second

const clientPort = 2181

// Node is one server's container. It implements cluster.Node.
type Node struct {
	id           int
	ip           string
	dir, logPath string
	c            *Cluster

	mu  sync.Mutex
	ctr *testcontainers.DockerContainer
}

var _ cluster.Node = (*Node)(nil)

func (n *Node) ID() int { return n.id }

// ClientAddr is the container's address and client port, reached from the
// controller through the network's bridge.
func (n *Node) ClientAddr() string { return net.JoinHostPort(n.ip, strconv.Itoa(clientPort)) }

// IP is the container's static address.
func (n *Node) IP() string { return n.ip }

// LogPath is the container's output (the JVM logs to stderr, as the
// official image does), copied there by Close or Cleanup.
func (n *Node) LogPath() string { return n.logPath }

// ContainerID is the engine's id of the server's container.
func (n *Node) ContainerID() string {
	if n.ctr == nil {
		return ""
	}
	return n.ctr.GetContainerID()
}

func (n *Node) name() string { return fmt.Sprintf("zkchaos-%s-n%d", n.c.cfg.RunID, n.id) }

// env is the official image's configuration for this server: its id, every
// server by address (stable across restarts: they are static), and what
// cluster/local writes into zoo.cfg besides.
func (n *Node) env() map[string]string {
	cfg := &n.c.cfg
	servers := make([]string, len(n.c.nodes))
	for i, m := range n.c.nodes {
		servers[i] = fmt.Sprintf("server.%d=%s:2888:3888;%d", m.id, m.ip, clientPort)
	}
	lo, hi := zkjvm.SessionTimeouts(cfg.TickTime, cfg.MaxSessionTimeout)
	forceSync := "no"
	if cfg.ForceSync {
		forceSync = "yes"
	}
	return map[string]string{
		"ZOO_MY_ID":                  strconv.Itoa(n.id),
		"ZOO_SERVERS":                strings.Join(servers, " "),
		"ZOO_TICK_TIME":              strconv.FormatInt(cfg.TickTime.Milliseconds(), 10),
		"ZOO_INIT_LIMIT":             "10",
		"ZOO_SYNC_LIMIT":             "5",
		"ZOO_4LW_COMMANDS_WHITELIST": strings.Join(cluster.FourLetterWords, ","),
		// The image's defaults are the official image's (no purge); the
		// run's are zkjvm's, as cluster/local writes them.
		"ZOO_AUTOPURGE_SNAPRETAINCOUNT": strconv.Itoa(zkjvm.PurgeSnapRetainCount),
		"ZOO_AUTOPURGE_PURGEINTERVAL":   strconv.Itoa(zkjvm.PurgeIntervalHours),
		"ZOO_CFG_EXTRA": fmt.Sprintf("minSessionTimeout=%d maxSessionTimeout=%d forceSync=%s",
			lo.Milliseconds(), hi.Milliseconds(), forceSync),
	}
}

// create makes the container, not started. conf/, data/ and datalog/
// under the node's directory are mounted where the official image keeps
// them, so the entrypoint's zoo.cfg and myid, and the data, outlive the
// container and show in the run folder.
func (n *Node) create(ctx context.Context) error {
	var binds []string
	for _, d := range []string{"conf", "data", "datalog"} {
		p := filepath.Join(n.dir, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("zk node %d: %w", n.id, err)
		}
		binds = append(binds, p+":/"+d)
	}
	labels := n.c.cfg.labels()
	labels[LabelNode] = strconv.Itoa(n.id)
	labels[LabelLog] = n.logPath
	netName, ip := n.c.net.Name, serverAddr(n.c.net.Subnet, n.id)
	req := testcontainers.ContainerRequest{
		Image:    n.c.cfg.Image,
		Name:     n.name(),
		Hostname: fmt.Sprintf("n%d", n.id),
		Env:      n.env(),
		Labels:   labels,
		// The JVM runs as the controller's user, so the files it writes in
		// the run folder are the controller's; exec'd tools run as root.
		User:     fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		Networks: []string{netName},
		EndpointSettingsModifier: func(m map[string]*network.EndpointSettings) {
			es := m[netName]
			if es == nil {
				es = &network.EndpointSettings{}
				m[netName] = es
			}
			es.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip}
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode(netName)
			// For the partition rules, made by exec inside the container.
			hc.CapAdd = []string{"NET_ADMIN"}
			hc.Binds = binds
		},
	}
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req})
	if ctr != nil {
		n.ctr = ctr.(*testcontainers.DockerContainer)
	}
	if err != nil {
		return fmt.Errorf("zk node %d: create container: %w", n.id, err)
	}
	return nil
}

// state is the engine's view of the container.
func (n *Node) state(ctx context.Context) (*container.State, error) {
	r, err := n.c.cli.ContainerInspect(ctx, n.ContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("zk node %d: inspect container: %w", n.id, err)
	}
	if r.Container.State == nil {
		return nil, fmt.Errorf("zk node %d: inspect container: no state", n.id)
	}
	return r.Container.State, nil
}

// Process is the server as the engine and the container's own ps show
// it: running while the container runs, stopped when its PID 1 (the JVM)
// shows state T. Instance is the container and its JVM's host PID, which
// a restart changes.
func (n *Node) Process(ctx context.Context) (cluster.Process, error) {
	st, err := n.state(ctx)
	if err != nil || !st.Running {
		return cluster.Process{}, err
	}
	ps, err := n.procState(ctx)
	if err != nil {
		return cluster.Process{}, err
	}
	return cluster.Process{Running: true, Stopped: strings.HasPrefix(ps, "T"), PID: st.Pid,
		Instance: fmt.Sprintf("container %s pid %d", n.name(), st.Pid)}, nil
}

// Start starts the container (again after Stop or Kill, with its data).
// It returns once the engine says it runs, not when it serves.
func (n *Node) Start(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.state(ctx)
	if err != nil {
		return "", fmt.Errorf("start %w", err)
	}
	if st.Running {
		return "", fmt.Errorf("start zk node %d: already running as pid %d", n.id, st.Pid)
	}
	if err := n.ctr.Start(ctx); err != nil {
		return "", fmt.Errorf("start zk node %d: %w", n.id, err)
	}
	if st, err = n.state(ctx); err != nil {
		return "", fmt.Errorf("start %w", err)
	}
	if !st.Running {
		return "", fmt.Errorf("start zk node %d: container %s after start (exit %d)", n.id, st.Status, st.ExitCode)
	}
	n.c.cfg.Logger.Info("zk node started", "node", n.id, "container", n.name(), "addr", n.ClientAddr())
	return fmt.Sprintf("container %s running, JVM pid %d", n.name(), st.Pid), nil
}

// Stop ends the server gracefully: SIGTERM, SIGKILL after stopGrace. A
// paused JVM is resumed first, since it cannot act on SIGTERM stopped.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.state(ctx)
	if err != nil {
		return fmt.Errorf("stop %w", err)
	}
	if !st.Running {
		return nil
	}
	_ = n.signal(ctx, "CONT")
	grace := stopGrace
	if err := n.ctr.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("stop zk node %d: %w", n.id, err)
	}
	n.c.cfg.Logger.Info("zk node stopped", "node", n.id)
	return nil
}

// Kill SIGKILLs the JVM through the engine and returns once the engine
// says the container is no longer running (its address is then free, its
// data stays mounted for Start).
// It verifies from both sides: the engine shows the container exited,
// and the address refuses four-letter words.
func (n *Node) Kill(ctx context.Context) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st, err := n.state(ctx)
	if err != nil {
		return "", fmt.Errorf("kill %w", err)
	}
	if !st.Running {
		return "", fmt.Errorf("kill zk node %d: not running (container %s)", n.id, st.Status)
	}
	if err := n.signal(ctx, "KILL"); err != nil {
		return "", fmt.Errorf("kill zk node %d: %w", n.id, err)
	}
	var after *container.State
	err = waitUntil(ctx, signalWait, func(ctx context.Context) (bool, error) {
		s, err := n.state(ctx)
		after = s
		return err == nil && !s.Running, err
	})
	if err != nil {
		return "", fmt.Errorf("kill zk node %d: still running after SIGKILL: %w", n.id, err)
	}
	n.c.cfg.Logger.Info("zk node killed", "node", n.id, "pid", st.Pid)
	if err := cluster.Refuses(ctx, n); err != nil {
		return "", fmt.Errorf("kill zk node %d: container %s but %w", n.id, after.Status, err)
	}
	return fmt.Sprintf("container %s %s (exit %d) per the engine; srvr refused", n.name(), after.Status, after.ExitCode), nil
}

// signal sends sig to the container's PID 1 through the engine (docker
// kill -s).
func (n *Node) signal(ctx context.Context, sig string) error {
	if _, err := n.c.cli.ContainerKill(ctx, n.ContainerID(), client.ContainerKillOptions{Signal: sig}); err != nil {
		return fmt.Errorf("signal %s: %w", sig, err)
	}
	return nil
}

// Status asks the server itself (srvr). A server that does not answer is
// an error with a zero Status.
func (n *Node) Status(ctx context.Context) (cluster.Status, error) {
	out, err := cluster.FourLetter(ctx, n.ClientAddr(), "srvr")
	if err != nil {
		return cluster.Status{}, fmt.Errorf("status of zk node %d: %w", n.id, err)
	}
	return cluster.ParseSrvr(out), nil
}

// remove copies the container's log into LogPath and removes the
// container; a container already gone is fine.
func (n *Node) remove(ctx context.Context) error {
	if n.ctr == nil {
		return nil
	}
	id := n.ContainerID()
	err := copyLog(ctx, n.c.cli, id, n.logPath)
	if _, rerr := n.c.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !errdefs.IsNotFound(rerr) {
		return errors.Join(err, fmt.Errorf("zk node %d: remove container: %w", n.id, rerr))
	}
	return err
}

// waitUntil polls cond every 20 ms until it holds or ctx ends. It gives
// up only when a poll begun after limit has passed still fails. A poll is
// a docker exec or inspect, which a loaded machine can hold for seconds
// (a 5 s bound on the polls themselves failed a resume whose SIGCONT had
// landed): limit bounds how long the effect may take to show, not how
// long a look at it may take.
func waitUntil(ctx context.Context, limit time.Duration, cond func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(limit)
	var last error
	for {
		began := time.Now()
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if began.After(deadline) {
			if last == nil {
				return fmt.Errorf("not seen within %s", limit)
			}
			return fmt.Errorf("not seen within %s: %w", limit, last)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
