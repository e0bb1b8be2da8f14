package ssh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/relay"
	"github.com/zkchaos/zkchaos/cluster/zkjvm"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Name is the backend's --cluster value.
const Name = "ssh"

// BaseDir holds every run's directories on a host: BaseDir/<run id>/n<id>
// for each server, distinct per server even when hosts share a file
// system.
const BaseDir = "/var/tmp/zkchaos"

// ChainPrefix names the run's partition chain on each host
// (ZKCHAOS-<run id>): a chain of its own, so a host shared with other
// runs, or with the user's own rules, only loses what this run added.
const ChainPrefix = "ZKCHAOS-"

// Packages are what --install apt-get installs on a host that lacks
// them: a headless JRE and Debian's ZooKeeper jars with a logger.
var Packages = []string{"openjdk-17-jre-headless", "libzookeeper-java", "libslf4j-java", "iptables", "procps"}

// Capabilities: every server verb, on the hosts.
func Capabilities() cluster.Capabilities {
	return cluster.Capabilities{Backend: Name, Lacks: map[cluster.Capability]string{}}
}

// ParseHosts reads --hosts: comma-separated host names or addresses, at
// least one, none twice (two servers on one host would share its ports).
func ParseHosts(s string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(s, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, " /@:'\"\\") {
			return nil, fmt.Errorf("%q: a host name or IP address (user with %s, port with %s)", h, setting.Name("SSHUser"), setting.Name("SSHPort"))
		}
		for _, o := range out {
			if o == h {
				return nil, fmt.Errorf("%q given twice (one server per host)", h)
			}
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, errors.New("no host: give the servers' hosts, comma-separated")
	}
	return out, nil
}

// checkScript prints what a host lacks to run a server; with install it
// first apt-get installs the packages of what is missing.
func checkScript(install bool) string {
	s := `missing=""; pkgs=""
need() { missing="$missing $1"; pkgs="$pkgs $2"; }
check() {
  missing=""; pkgs=""
  command -v java >/dev/null || need java openjdk-17-jre-headless
  [ -f /usr/share/java/zookeeper.jar ] || need /usr/share/java/zookeeper.jar libzookeeper-java
  [ -f /usr/share/java/slf4j-simple.jar ] || need /usr/share/java/slf4j-simple.jar libslf4j-java
  command -v iptables >/dev/null || need iptables iptables
  command -v setsid >/dev/null || need setsid util-linux
  command -v pgrep >/dev/null || need pgrep procps
}
check
`
	if install {
		s += `if [ -n "$missing" ]; then
  log=$(mktemp)
  { apt_get update -q && apt_get install -y -q $pkgs; } </dev/null >$log 2>&1 || { echo "apt-get install$pkgs failed: $(tail -n 1 $log)"; rm -f $log; exit 1; }
  rm -f $log
  check
fi
`
	}
	return s + `[ -z "$missing" ] || { echo "missing:$missing (Debian packages:$pkgs; ` + setting.Name("Install") + ` installs them)"; exit 1; }`
}

// Reach checks, before anything of a run is made, that every host
// takes the connection (host key known, key accepted), lets the user run
// iptables as root (root, or sudo -n) and has what a server needs (with install,
// after installing it). The error names every failing host, one per
// line; nothing is left on any host.
func Reach(ctx context.Context, hosts []string, a Auth, install bool) error {
	hs, err := dialAll(ctx, hosts, a)
	defer closeAll(hs)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			if out, err := h.Run(ctx, checkScript(install), nil); err != nil {
				mu.Lock()
				errs = append(errs, &HostError{h.Name, errors.New(firstLine(out, err))})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// dialAll connects to every host at once; on error the hosts reached are
// returned too, for the caller to close.
func dialAll(ctx context.Context, hosts []string, a Auth) ([]*Host, error) {
	a, err := a.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, cleanup, err := a.clientConfig()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	hs := make([]*Host, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, name := range hosts {
		wg.Go(func() { hs[i], errs[i] = dial(ctx, name, a, cfg) })
	}
	wg.Wait()
	var ok []*Host
	for _, h := range hs {
		if h != nil {
			ok = append(ok, h)
		}
	}
	return ok, errors.Join(errs...)
}

func closeAll(hs []*Host) {
	for _, h := range hs {
		h.Close()
	}
}

// Config describes the ensemble of a run.
type Config struct {
	Hosts []string
	Auth  Auth
	// RunID names the run's directories and chain on every host.
	RunID string
	// Dir is the run folder's directory for the servers' logs.
	Dir               string
	TickTime          time.Duration
	MaxSessionTimeout time.Duration
	// RelayHost, when set, is the address on the run's bridge where a
	// relay per server listens for the workers in namespaces.
	RelayHost string
	// LeasePeriod is how long a host waits for the controller before it
	// heals itself (default LeasePeriod).
	LeasePeriod time.Duration
	Logger      *slog.Logger
}

// Cluster is the ensemble on the hosts. It implements cluster.Cluster.
type Cluster struct {
	cfg       Config
	log       *slog.Logger
	classPath string
	nodes     []*Node
	relays    []*relay.Relay
	lease     *leaser

	mu     sync.Mutex
	closed bool
}

var _ cluster.Cluster = (*Cluster)(nil)

// New connects to every host and prepares its server (directory,
// zoo.cfg, myid, the watchdog and its lease) without starting it. On
// error, whatever it made on any host is removed again.
func New(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LeasePeriod <= 0 {
		cfg.LeasePeriod = LeasePeriod
	}
	if cfg.TickTime <= 0 {
		cfg.TickTime = 200 * time.Millisecond
	}
	if cfg.RunID == "" || strings.ContainsAny(cfg.RunID, " /'") {
		return nil, fmt.Errorf("ssh ensemble: run id %q", cfg.RunID)
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, classPath: zkjvm.DebianClassPath}
	hs, err := dialAll(ctx, cfg.Hosts, cfg.Auth)
	if err != nil {
		closeAll(hs)
		return nil, err
	}
	for i, h := range hs {
		n := &Node{id: i + 1, host: h, dir: fmt.Sprintf("%s/%s/n%d", BaseDir, cfg.RunID, i+1), chain: ChainPrefix + cfg.RunID,
			logPath: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1), "zk.log"), c: c}
		n.addr = n.Target()
		c.nodes = append(c.nodes, n)
	}
	if err := c.prepare(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, c.Close(cctx))
	}
	return c, nil
}

// prepare writes each server's files and starts its watchdog, then the
// lease refreshes and the relays.
func (c *Cluster) prepare(ctx context.Context) error {
	servers := make([]zkjvm.Server, len(c.nodes))
	for i, n := range c.nodes {
		servers[i] = zkjvm.Server{ID: n.id, IP: n.host.IP, Quorum: QuorumPort, Election: ElectionPort}
	}
	err := c.each(func(n *Node) error {
		if err := os.MkdirAll(filepath.Dir(n.logPath), 0o755); err != nil {
			return err
		}
		cfg := zkjvm.ZooCfg(zkjvm.Settings{TickTime: c.cfg.TickTime, MaxSessionTimeout: c.cfg.MaxSessionTimeout,
			DataDir: n.dir + "/data", ClientPort: ClientPort, ClientAddr: "0.0.0.0",
			FourLetterWords: cluster.FourLetterWords, Servers: servers})
		// BaseDir is everyone's (sticky, as /var/tmp): users share it.
		script := fmt.Sprintf("set -e\numask 022\nB=%s; D=%s\n[ -d $B ] || { mkdir -p $B && chmod 1777 $B; }\nmkdir -p $D/data\ncat >$D/zoo.cfg\necho %d >$D/data/myid\n",
			Quote(BaseDir), Quote(n.dir), n.id)
		if _, err := n.host.Run(ctx, script, []byte(cfg)); err != nil {
			return fmt.Errorf("write zoo.cfg: %w", err)
		}
		if err := startWatchdog(ctx, n.host, n.dir, n.chain, c.cfg.LeasePeriod); err != nil {
			return err
		}
		c.log.Info("zk node prepared", "node", n.id, "host", n.host.Name, "ip", n.host.IP, "dir", n.dir, "lease", c.cfg.LeasePeriod)
		return nil
	})
	c.lease = startLeaser(c.nodes, c.log)
	if err != nil {
		return err
	}
	if c.cfg.RelayHost != "" {
		for _, n := range c.nodes {
			r, err := relay.Start(c.cfg.RelayHost, n.Target(), c.log)
			if err != nil {
				return fmt.Errorf("ssh ensemble: relay to %s: %w", n.Target(), err)
			}
			c.relays = append(c.relays, r)
			n.addr = r.Addr()
			c.log.Info("relay for the workers", "node", n.id, "listen", n.addr, "server", n.Target())
		}
	}
	return nil
}

// each runs f for every node at once and joins the errors, each naming
// its host.
func (c *Cluster) each(f func(n *Node) error) error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			if err := f(n); err != nil {
				var he *HostError
				if !errors.As(err, &he) {
					err = &HostError{n.host.Name, err}
				}
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Nodes implements cluster.Cluster.
func (c *Cluster) Nodes() []cluster.Node {
	out := make([]cluster.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n
	}
	return out
}

// ConnectString is what the run's processes connect to.
func (c *Cluster) ConnectString() string { return cluster.JoinAddrs(c.Nodes()) }

// Capabilities implements cluster.Cluster.
func (c *Cluster) Capabilities() cluster.Capabilities { return Capabilities() }

// Start starts every server.
func (c *Cluster) Start(ctx context.Context) error { return cluster.StartAll(ctx, c.Nodes()) }

// WaitReady returns when one leader and the other servers follow.
func (c *Cluster) WaitReady(ctx context.Context) error { return cluster.WaitReady(ctx, c, c.log) }

// Restore undoes the faults left on the servers.
func (c *Cluster) Restore(ctx context.Context) ([]string, error) {
	return cluster.RestoreAll(ctx, c.Nodes())
}

// Close stops every server, fetches its log into the run folder and
// removes the run's chain and directory from every host, then ends the
// lease refreshes, the relays and the connections. A host that cannot be
// reached heals itself when its lease runs out.
func (c *Cluster) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	// The watchdogs are stopped first thing on each host, and healing
	// twice is harmless, so the refreshes can end now.
	if c.lease != nil {
		c.lease.stop()
	}
	for _, r := range c.relays {
		r.Close()
	}
	err := c.each(func(n *Node) error {
		var errs []error
		if err := stopWatchdog(ctx, n.host, n.dir); err != nil {
			errs = append(errs, err)
		}
		if err := n.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := n.fetchLog(ctx); err != nil {
			errs = append(errs, err)
		}
		if _, err := n.host.Run(ctx, healScript(n.dir, n.chain), nil); err != nil {
			errs = append(errs, fmt.Errorf("remove chain %s and %s: %w", n.chain, n.dir, err))
		}
		return errors.Join(errs...)
	})
	for _, n := range c.nodes {
		n.host.Close()
	}
	return err
}

// fetchLog copies the server's log from its host into the run folder.
func (n *Node) fetchLog(ctx context.Context) error {
	out, err := n.host.Run(ctx, "cat "+Quote(n.dir+"/zk.log")+" 2>/dev/null; true", nil)
	if err != nil {
		return fmt.Errorf("fetch log: %w", err)
	}
	if err := os.WriteFile(n.logPath, []byte(out), 0o644); err != nil {
		return fmt.Errorf("fetch log: %w", err)
	}
	return nil
}

// IP is the server's host's address.
func (n *Node) IP() string { return n.host.IP }
