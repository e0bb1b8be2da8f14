// Package backend chooses the ensemble's backend for a run by name
// (--cluster local|docker|external|ssh): what it can do, checked before anything
// starts; what it needs on this machine; and the ensemble it makes, with
// the network the run's own processes (workers, the register) join. It is
// the one place that knows every backend, so runner/ and nemesis/ know
// only cluster.Cluster.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
	"github.com/zkchaos/zkchaos/cluster/external"
	"github.com/zkchaos/zkchaos/cluster/local"
	zkssh "github.com/zkchaos/zkchaos/cluster/ssh"
	"github.com/zkchaos/zkchaos/host/netns"
)

// The backends.
const (
	// Local runs each server as a JVM on this machine, in its own network
	// namespace (netns mode) or on 127.0.0.1 (loopback mode).
	Local = "local"
	// Docker runs each server in a container of the image `chaos image
	// build` makes, on a Docker network of the run.
	Docker = "docker"
	// External is an ensemble the user already runs (--zk), reached as a
	// client only: no server fault, the run's znodes under a subtree of
	// its own.
	External = external.Name
	// SSH runs each server on a remote host of --hosts, driven over SSH;
	// every fault is healed by its host when the controller's lease
	// runs out.
	SSH = zkssh.Name
)

// Names lists the --cluster values.
func Names() []string { return []string{Local, Docker, External, SSH} }

// SSHFlags are the ssh backend's settings (--hosts, --ssh-user,
// --ssh-port, --ssh-key, --ssh-known-hosts, --install).
type SSHFlags struct {
	Hosts   string
	Auth    zkssh.Auth
	Install bool
	// Given names the ssh flags the user gave, for refusing them with
	// another backend.
	Given []string
}

// HostCount is how many servers an ssh ensemble of hosts has (one per
// host), 0 for the other backends or hosts that do not parse.
func HostCount(name, hosts string) int {
	if name != SSH {
		return 0
	}
	hs, err := zkssh.ParseHosts(hosts)
	if err != nil {
		return 0
	}
	return len(hs)
}

// CheckHosts checks the ssh flags against the backend: --hosts required
// with ssh (and each a host name or address, none twice), every ssh flag
// refused with the others.
func CheckHosts(name string, f SSHFlags) error {
	if name != SSH {
		if len(f.Given) > 0 {
			return fmt.Errorf("--%s: only with --cluster ssh", strings.Join(f.Given, ", --"))
		}
		return nil
	}
	if strings.TrimSpace(f.Hosts) == "" {
		return errors.New("--cluster ssh needs --hosts host1,host2,... (one ZooKeeper server per host)")
	}
	if _, err := zkssh.ParseHosts(f.Hosts); err != nil {
		return fmt.Errorf("--hosts: %w", err)
	}
	if f.Auth.Port < 0 || f.Auth.Port > 65535 {
		return fmt.Errorf("--ssh-port %d: not 1..65535", f.Auth.Port)
	}
	for _, ff := range []struct{ flag, file string }{{"ssh-key", f.Auth.KeyFile}, {"ssh-known-hosts", f.Auth.KnownHosts}} {
		if ff.file == "" {
			continue
		}
		if _, err := os.Stat(ff.file); err != nil {
			return fmt.Errorf("--%s: %w", ff.flag, err)
		}
	}
	return nil
}

// CheckZK checks --zk against the backend: required with external (and
// every address host:port), refused with the others, which make their
// own ensemble.
func CheckZK(name, zk string) error {
	if name != External {
		if strings.TrimSpace(zk) != "" {
			return fmt.Errorf("--zk %s: only with --cluster external (the %s backend makes its own ensemble)", zk, name)
		}
		return nil
	}
	if strings.TrimSpace(zk) == "" {
		return errors.New("--cluster external needs --zk host:port,... (the client addresses of the ensemble to test)")
	}
	if _, err := external.ParseAddrs(zk); err != nil {
		return fmt.Errorf("--zk: %w", err)
	}
	return nil
}

// RunRoot is the subtree a run with the named backend keeps its znodes
// under: its own on an external ensemble, shared with nobody; "" for the
// backends whose ensemble is the run's alone.
func RunRoot(name, runID string) string {
	if name == External {
		return external.RunRoot(runID)
	}
	return ""
}

// RemoveRunRoot removes a run's subtree (RunRoot) from the ensemble at
// connect as auth, and says how many znodes went.
func RemoveRunRoot(ctx context.Context, connect, root string, auth recipes.Auth) (int, error) {
	return external.RemoveTree(ctx, connect, root, auth)
}

// Reach checks, before anything of a run is made, that an external
// ensemble answers at every address of zk and grants sessions of the
// timeout the run asks for, or that every ssh host takes the connection,
// lets the user run iptables as root and has what a server needs
// (installing it with --install); a no-op for the backends that make
// their own on this machine.
func Reach(ctx context.Context, name, zk string, session time.Duration, sf SSHFlags) error {
	switch name {
	case External:
		return reachExternal(ctx, zk, session)
	case SSH:
		hosts, err := zkssh.ParseHosts(sf.Hosts)
		if err != nil {
			return fmt.Errorf("--hosts: %w", err)
		}
		return zkssh.Reach(ctx, hosts, sf.Auth, sf.Install)
	}
	return nil
}

// reachExternal probes the user's ensemble and refuses a session timeout
// it would not grant as asked: pauses are timed against the session,
// and one the servers lengthened would expire nobody.
func reachExternal(ctx context.Context, zk string, session time.Duration) error {
	addrs, err := external.ParseAddrs(zk)
	if err != nil {
		return fmt.Errorf("--zk: %w", err)
	}
	if err := external.Probe(ctx, addrs); err != nil {
		return fmt.Errorf("--cluster external: unreachable: %w", err)
	}
	granted, err := external.GrantedTimeout(ctx, addrs, session)
	if err != nil {
		return fmt.Errorf("--cluster external: %w", err)
	}
	if granted.Milliseconds() != session.Milliseconds() {
		return fmt.Errorf("--session-timeout %s: the ensemble at %s grants %s instead (its minSessionTimeout..maxSessionTimeout): "+
			"pauses and expiries would be timed against a session it does not give; use --session-timeout %s",
			session, zk, granted, granted)
	}
	return nil
}

// The lock services (--service): the ZooKeeper ensemble, and the other
// services a run may test locks on instead.
const (
	ZooKeeper = cluster.ZooKeeper
	Redis     = cluster.Redis
	Etcd      = cluster.Etcd
)

// Services lists the --service values.
func Services() []string { return []string{ZooKeeper, Redis, Etcd} }

// ValidateService checks a --service value and whether the backend runs
// it, by name alone: only the local backend starts redis and etcd servers
// (the docker image is ZooKeeper's).
func ValidateService(service, backendName string) error {
	if !slices.Contains(Services(), service) {
		return fmt.Errorf("unknown service %q (known: %s)", service, strings.Join(Services(), ", "))
	}
	if service != ZooKeeper && backendName != Local {
		return fmt.Errorf("%s runs on the local backend only (the %s backend's image is ZooKeeper's); use --cluster local", service, backendName)
	}
	return nil
}

// program is the local backend's server program for service.
func program(service string) local.Program {
	switch service {
	case Redis:
		return local.Redis{}
	case Etcd:
		return local.Etcd{}
	}
	return local.ZooKeeper{}
}

// Validate checks a --cluster value and whether the backend can run in
// the run's network mode, by name alone (nothing is asked of the machine).
func Validate(name, netMode string) error {
	if !slices.Contains(Names(), name) {
		return fmt.Errorf("unknown backend %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if name == Docker && netMode != "netns" {
		return fmt.Errorf("%s needs --net netns (root and network namespaces): the workers and the register join the Docker network's bridge in namespaces of their own, which is also where the client faults act; this run's network mode is %s", name, netMode)
	}
	return nil
}

// Capabilities is what the named backend can do to its servers in a run
// with (netns true) or without network namespaces, known before anything
// is made so a fault it lacks is refused at validation.
func Capabilities(name string, netns bool) cluster.Capabilities {
	switch name {
	case Docker:
		return docker.Capabilities()
	case External:
		return external.Capabilities()
	case SSH:
		return zkssh.Capabilities()
	}
	return local.Capabilities(netns)
}

// Preflight checks, before anything of a run starts, what the backend
// needs on this machine. For docker: an engine that answers and the
// server image: tag, or by default the one `chaos image build` makes,
// which is built here (offline, once per machine; about a minute) when
// missing unless noBuild. Another tag is never built nor pulled. Progress
// goes to log.
//
// A service other than ZooKeeper needs its server's binary (Debian's
// redis-server or etcd-server): missing, the run is refused here.
func Preflight(ctx context.Context, name, service, tag string, noBuild bool, log *slog.Logger) error {
	if cluster.ServiceOf(service) != ZooKeeper {
		if err := program(service).Check(); err != nil {
			return fmt.Errorf("--service %s: %w", service, err)
		}
		return nil
	}
	if name != Docker {
		return nil
	}
	cli, err := engine.Connect(ctx)
	if err != nil {
		return fmt.Errorf("--cluster docker: %w", err)
	}
	defer cli.Close()
	spec, err := image.Detect(ctx)
	if err != nil {
		return fmt.Errorf("--cluster docker: %w", err)
	}
	if tag == "" {
		tag = spec.Tag()
	}
	if _, _, found, err := image.Lookup(ctx, cli, tag); err != nil {
		return fmt.Errorf("--cluster docker: %w", err)
	} else if found {
		return nil
	}
	switch {
	case tag != spec.Tag():
		return fmt.Errorf("--image %s: no such image on this engine (images are never pulled; `chaos image build` makes %s)", tag, spec.Tag())
	case noBuild:
		return fmt.Errorf("--cluster docker: image %s not found and --no-build given: build it with `chaos image build` (images are never pulled)", tag)
	}
	log.Info("docker image missing: building it once for this machine (offline, about a minute)", "tag", tag)
	res, err := image.Build(ctx, cli, image.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("--cluster docker: build image %s: %w", spec.Tag(), err)
	}
	log.Info("docker image built", "tag", res.Tag, "took", res.Took.Round(time.Second).String(), "mb", res.Size/1e6)
	return nil
}

// Options describe the ensemble of a run.
type Options struct {
	// Service is the lock service the servers run ("" is ZooKeeper).
	Service string
	Nodes   int
	// Dir is the run folder's directory for the servers' files.
	Dir               string
	TickTime          time.Duration
	MaxSessionTimeout time.Duration
	// NetMode is netns or loopback (local only).
	NetMode string
	// RunID and ControllerPID own and label what is made, so the janitor
	// and `chaos cleanup` find it after a crash.
	RunID         string
	ControllerPID int
	// Image is the docker backend's image ("" = this machine's default).
	Image string
	// Env tags the local JVMs with the run (proc.Env).
	Env []string
	// ZK is the external backend's --zk.
	ZK string
	// SSH is the ssh backend's hosts and login.
	SSH    SSHFlags
	Logger *slog.Logger
}

// Ensemble is a run's servers, not started, and the network the run's
// own processes join (nil in loopback mode).
type Ensemble struct {
	Cluster cluster.Cluster
	Net     *netns.Network
	// netFirst: the network goes before the servers. A local ensemble's
	// servers live in the network's namespaces, so they stop first; a
	// docker ensemble's Close removes the Docker network the run's
	// namespaces are attached to, so they go first.
	netFirst bool
}

// Close removes the servers and the network, in the backend's order; each
// is idempotent, and an error of one does not keep the other.
func (e *Ensemble) Close(ctx context.Context) error {
	var errs []error
	closeNet := func() {
		if e.Net != nil {
			if err := e.Net.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("remove run network: %w", err))
			}
		}
	}
	if e.netFirst {
		closeNet()
	}
	if e.Cluster != nil {
		if err := e.Cluster.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop ensemble: %w", err))
		}
	}
	if !e.netFirst {
		closeNet()
	}
	return errors.Join(errs...)
}

// Open makes the named backend's ensemble and network. On error, what it
// made is in the returned Ensemble (possibly partly), for the caller's
// teardown to remove; the janitor finds it too.
func Open(ctx context.Context, name string, o Options) (*Ensemble, error) {
	if o.ControllerPID == 0 {
		o.ControllerPID = os.Getpid()
	}
	e := &Ensemble{}
	switch name {
	case Local:
		return e, openLocal(ctx, e, o)
	case Docker:
		return e, openDocker(ctx, e, o)
	case External:
		return e, openExternal(ctx, e, o)
	case SSH:
		return e, openSSH(ctx, e, o)
	}
	return e, fmt.Errorf("unknown backend %q", name)
}

// openLocal claims a netns slot (netns mode) and puts one namespace per
// server on it.
func openLocal(ctx context.Context, e *Ensemble, o Options) error {
	if o.NetMode == "netns" {
		n, err := netns.Create(ctx, o.RunID, o.ControllerPID, o.Logger)
		if err != nil {
			return fmt.Errorf("create run network: %w", err)
		}
		e.Net = n
	}
	c, err := local.New(ctx, local.Config{Nodes: o.Nodes, Dir: o.Dir, TickTime: o.TickTime,
		MaxSessionTimeout: o.MaxSessionTimeout, Network: e.Net, Env: o.Env, Program: program(o.Service), Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}

// openDocker creates the Docker network and the containers, then attaches
// the run's own network to the same bridge, so workers reach the servers
// and client faults act in the workers' namespaces as on local.
func openDocker(ctx context.Context, e *Ensemble, o Options) error {
	c, err := docker.New(ctx, docker.Config{Nodes: o.Nodes, Dir: o.Dir, RunID: o.RunID, ControllerPID: o.ControllerPID,
		Image: o.Image, TickTime: o.TickTime, MaxSessionTimeout: o.MaxSessionTimeout, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster, e.netFirst = c, true
	nw := c.Network()
	n, err := netns.Attach(ctx, o.RunID, o.ControllerPID, nw.Slot, nw.Bridge, docker.FirstHost, o.Logger)
	if err != nil {
		return fmt.Errorf("attach run network to docker network %s: %w", nw.Name, err)
	}
	e.Net = n
	return nil
}

// openExternal claims a netns slot (netns mode) for the run's own
// processes and puts a relay per server on its gateway (see
// cluster/relay); in loopback mode the processes dial the
// user's addresses themselves.
func openExternal(ctx context.Context, e *Ensemble, o Options) error {
	addrs, err := external.ParseAddrs(o.ZK)
	if err != nil {
		return fmt.Errorf("--zk: %w", err)
	}
	relay, err := relayNet(ctx, e, o)
	if err != nil {
		return err
	}
	c, err := external.New(external.Config{Addrs: addrs, RelayHost: relay, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}

// relayNet claims a netns slot for the run's own processes in netns
// mode and returns its gateway, where the relays to servers the run does
// not start on this machine listen ("" in loopback mode: the processes
// dial the servers themselves).
func relayNet(ctx context.Context, e *Ensemble, o Options) (string, error) {
	if o.NetMode != "netns" {
		return "", nil
	}
	n, err := netns.Create(ctx, o.RunID, o.ControllerPID, o.Logger)
	if err != nil {
		return "", fmt.Errorf("create run network: %w", err)
	}
	e.Net = n
	return n.Gateway, nil
}

// openSSH claims a netns slot (netns mode) for the run's own processes,
// then prepares a server on every host (cluster/ssh), with a relay per
// server on the slot's gateway as for an external ensemble.
func openSSH(ctx context.Context, e *Ensemble, o Options) error {
	hosts, err := zkssh.ParseHosts(o.SSH.Hosts)
	if err != nil {
		return fmt.Errorf("--hosts: %w", err)
	}
	relay, err := relayNet(ctx, e, o)
	if err != nil {
		return err
	}
	c, err := zkssh.New(ctx, zkssh.Config{Hosts: hosts, Auth: o.SSH.Auth, RunID: o.RunID, Dir: o.Dir,
		TickTime: o.TickTime, MaxSessionTimeout: o.MaxSessionTimeout, RelayHost: relay, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("prepare ensemble: %w", err)
	}
	e.Cluster = c
	return nil
}
