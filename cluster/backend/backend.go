// Package backend chooses the ensemble's backend for a run by name
// (--cluster local|docker|external|ssh): what it can do, checked before anything
// starts; what it needs on this machine; and the ensemble it makes, with
// the network the run's own processes (workers, the register) join. Each
// backend registers itself from a file of its own here (local.go,
// docker.go, external.go, ssh.go), as each lock service does (zookeeper.go,
// redis.go, etcd.go), so runner/ and nemesis/ know only cluster.Cluster
// and no list of names is kept anywhere else.
package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	zkssh "github.com/zkchaos/zkchaos/cluster/ssh"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Backend is one --cluster value. What only some backends have (flags of
// their own, checks before the run, a subtree of the run) is an optional
// interface below, so a backend states only what it does.
type Backend interface {
	// Name is the --cluster value.
	Name() string
	// Validate checks whether the backend can run in the run's network
	// mode, by name alone (nothing is asked of the machine).
	Validate(netMode string) error
	// Capabilities is what the backend can do to its servers in a run
	// with (netns true) or without network namespaces, known before
	// anything is made so a fault it lacks is refused at validation.
	Capabilities(netns bool) cluster.Capabilities
	// RunsService says whether the backend can run the lock service's
	// servers.
	RunsService(service string) bool
	// OnThisMachine says whether the servers run on this machine (the
	// ensemble is the run's own and can be measured alone).
	OnThisMachine() bool
	// Open makes the ensemble and the network into e. On error, what it
	// made is in e (possibly partly), for the caller's teardown.
	Open(ctx context.Context, e *Ensemble, o Options) error
}

// preflighter is a backend that needs something of this machine before
// a run of it starts (docker: an engine and the server image).
type preflighter interface {
	Preflight(ctx context.Context, tag string, noBuild bool, log *slog.Logger) error
}

// serverHost is a backend that starts the service's servers as programs
// of this machine (local): what they need here (java and ZooKeeper's
// jars, redis-server, etcd) is checked before anything of a run is made,
// not when the first server fails to start.
type serverHost interface {
	checkServers(service string) error
}

// reacher is a backend whose servers run elsewhere and are reached before
// anything of the run is made.
type reacher interface {
	Reach(ctx context.Context, zk string, session time.Duration, sf SSHFlags) error
}

// zkTaker is the backend of --zk (an ensemble the user runs).
type zkTaker interface{ CheckZK(zk string) error }

// hostsTaker is the backend of the ssh flags (--hosts and the login).
type hostsTaker interface {
	CheckHosts(f SSHFlags) error
	HostCount(hosts string) int
}

// availabler is a backend that this machine may lack altogether, asked
// cheaply (docker: an engine that answers).
type availabler interface {
	Available(ctx context.Context) error
}

// resumer is a backend whose soak a new controller can carry on
// (chaos soak --resume): its servers' files stay where they were.
type resumer interface{ resumes() }

// postgresHost is a backend beside whose servers the run can start its
// PostgreSQL resource, in a network namespace of its own.
type postgresHost interface{ hostsPostgres() }

// imageTaker is the backend of --image.
type imageTaker interface{ takesImage() }

// rooted is a backend whose ensemble is shared with others: the run keeps
// its znodes under a subtree of its own there.
type rooted interface{ RunRoot(runID string) string }

type entry[T any] struct {
	v     T
	order int
}

// registry is one kind of named thing (backends, services), listed in
// the order each was registered with: the order the users have always
// seen in the help and in the errors.
type registry[T interface{ Name() string }] struct {
	what string
	mu   sync.Mutex
	m    map[string]entry[T]
}

func (r *registry[T]) add(v T, order int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]entry[T]{}
	}
	if _, dup := r.m[v.Name()]; dup {
		panic(fmt.Sprintf("%s %q registered twice", r.what, v.Name()))
	}
	r.m[v.Name()] = entry[T]{v, order}
}

func (r *registry[T]) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := make([]entry[T], 0, len(r.m))
	for _, e := range r.m {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry[T]) int { return cmp.Compare(a.order, b.order) })
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.v.Name()
	}
	return out
}

func (r *registry[T]) lookup(name string) (T, error) {
	r.mu.Lock()
	e, ok := r.m[name]
	r.mu.Unlock()
	if !ok {
		return e.v, fmt.Errorf("unknown %s %q (known: %s)", r.what, name, strings.Join(r.names(), ", "))
	}
	return e.v, nil
}

// where lists the names of the registered ones that pred holds for.
func (r *registry[T]) where(pred func(T) bool) []string {
	var out []string
	for _, n := range r.names() {
		if v, err := r.lookup(n); err == nil && pred(v) {
			out = append(out, n)
		}
	}
	return out
}

var backends = registry[Backend]{what: "backend"}

// Register adds a backend; order is its place in Names. Each backend's
// file calls it from init.
func Register(b Backend, order int) { backends.add(b, order) }

// Lookup is the backend of a --cluster value; the error of an unknown one
// lists the known ones.
func Lookup(name string) (Backend, error) { return backends.lookup(name) }

// Names lists the --cluster values.
func Names() []string { return backends.names() }

// has reports whether the named backend is a T (false for an unknown
// name, which Validate reports).
func has[T any](name string) (T, bool) {
	b, err := Lookup(name)
	if err != nil {
		var zero T
		return zero, false
	}
	t, ok := b.(T)
	return t, ok
}

// takers lists the backends that are a T, for the messages that refuse a
// flag of theirs with another backend.
func takers[T any]() string {
	return strings.Join(backends.where(func(b Backend) bool { _, ok := b.(T); return ok }), ", ")
}

// SSHFlags are the ssh backend's settings (--hosts, --ssh-user,
// --ssh-port, --ssh-key, --ssh-known-hosts, --install).
type SSHFlags struct {
	Hosts   string
	Auth    zkssh.Auth
	Install bool
	// Given names the ssh settings the user gave (runner.Config's fields:
	// Hosts, SSHUser, ...), for refusing them with another backend.
	Given []string
}

// HostCount is how many servers an ensemble of hosts has on the named
// backend (one per host), 0 for a backend without --hosts or hosts that
// do not parse.
func HostCount(name, hosts string) int {
	if h, ok := has[hostsTaker](name); ok {
		return h.HostCount(hosts)
	}
	return 0
}

// CheckHosts checks the ssh flags against the backend: the ssh backend
// checks them (--hosts required, each a host name or address, none
// twice); every other refuses them.
func CheckHosts(name string, f SSHFlags) error {
	if h, ok := has[hostsTaker](name); ok {
		return h.CheckHosts(f)
	}
	if len(f.Given) > 0 {
		return fmt.Errorf("%s: only with %s %s", setting.Names(", ", f.Given...), setting.Name("Cluster"), takers[hostsTaker]())
	}
	return nil
}

// CheckZK checks --zk against the backend: the external backend checks it
// (required, every address host:port); every other refuses it, making its
// own ensemble.
func CheckZK(name, zk string) error {
	if z, ok := has[zkTaker](name); ok {
		return z.CheckZK(zk)
	}
	if strings.TrimSpace(zk) != "" {
		return setting.Errorf("ZK", zk, "only with %s %s (the %s backend makes its own ensemble)", setting.Name("Cluster"), takers[zkTaker](), name)
	}
	return nil
}

// CheckImage refuses --image with a backend that runs no image.
func CheckImage(name, image string) error {
	if _, ok := has[imageTaker](name); !ok && image != "" {
		return setting.Errorf("Image", image, "only with %s %s", setting.Name("Cluster"), takers[imageTaker]())
	}
	return nil
}

// RunRoot is the subtree a run with the named backend keeps its znodes
// under: its own on a shared ensemble (external); "" for the backends
// whose ensemble is the run's alone.
func RunRoot(name, runID string) string {
	if r, ok := has[rooted](name); ok {
		return r.RunRoot(runID)
	}
	return ""
}

// Reach checks, before anything of a run is made, that servers the run
// does not start on this machine answer (external, ssh); a no-op for the
// backends that make their own here.
func Reach(ctx context.Context, name, zk string, session time.Duration, sf SSHFlags) error {
	if r, ok := has[reacher](name); ok {
		return r.Reach(ctx, zk, session, sf)
	}
	return nil
}

// Validate checks a --cluster value and whether the backend can run in
// the run's network mode, by name alone (nothing is asked of the machine).
func Validate(name, netMode string) error {
	b, err := Lookup(name)
	if err != nil {
		return err
	}
	return b.Validate(netMode)
}

// Capabilities is what the named backend can do to its servers in a run
// with (netns true) or without network namespaces (nothing lacking for an
// unknown name, which Validate reports).
func Capabilities(name string, netns bool) cluster.Capabilities {
	b, err := Lookup(name)
	if err != nil {
		return cluster.Capabilities{Backend: name}
	}
	return b.Capabilities(netns)
}

// OnThisMachine lists the backends whose servers run on this machine.
func OnThisMachine() []string {
	return backends.where(func(b Backend) bool { return b.OnThisMachine() })
}

// Preflight checks, before anything of a run starts, what the service and
// the backend need on this machine: the server's binary of a service
// other than ZooKeeper (Debian's redis-server or etcd-server), the local
// backend's server program (java and ZooKeeper's jars by default), the
// docker backend's engine and image (see its Preflight). Progress goes to
// log.
func Preflight(ctx context.Context, name, service, tag string, noBuild bool, log *slog.Logger) error {
	if err := PreflightService(service); err != nil {
		return err
	}
	if h, ok := has[serverHost](name); ok {
		if err := h.checkServers(service); err != nil {
			return fmt.Errorf("the %s backend's servers: %w", name, err)
		}
	}
	if p, ok := has[preflighter](name); ok {
		return p.Preflight(ctx, tag, noBuild, log)
	}
	return nil
}

// Resumable lists the backends whose soaks resume.
func Resumable() []string {
	return backends.where(func(b Backend) bool { _, ok := b.(resumer); return ok })
}

// PostgresHosts lists the backends a run with --resource postgres can
// use.
func PostgresHosts() []string {
	return backends.where(func(b Backend) bool { _, ok := b.(postgresHost); return ok })
}

// Available says, cheaply, whether this machine has the named backend at
// all (a Docker engine that answers); nil for the others.
func Available(ctx context.Context, name string) error {
	if a, ok := has[availabler](name); ok {
		return a.Available(ctx)
	}
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
	// RunID and Owners own and label what is made, so the janitor and
	// `chaos cleanup` find it after a crash, and leave it alone while
	// its controller or janitor runs (default: this process, no janitor).
	RunID  string
	Owners proc.Owners
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
	if o.Owners.Controller.PID == 0 {
		o.Owners = proc.Self()
	}
	e := &Ensemble{}
	b, err := Lookup(name)
	if err != nil {
		return e, err
	}
	return e, b.Open(ctx, e, o)
}

// relayNet claims a netns slot for the run's own processes in netns
// mode and returns its gateway, where the relays to servers the run does
// not start on this machine listen ("" in loopback mode: the processes
// dial the servers themselves).
func relayNet(ctx context.Context, e *Ensemble, o Options) (string, error) {
	if o.NetMode != "netns" {
		return "", nil
	}
	n, err := netns.Create(ctx, o.RunID, o.Owners, o.Logger)
	if err != nil {
		return "", fmt.Errorf("create run network: %w", err)
	}
	e.Net = n
	return n.Gateway, nil
}
