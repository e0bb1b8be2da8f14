// Package recipes holds the lock recipes a worker can run, one file each,
// behind the one small Lock interface. A recipe is the subject under test:
// the worker only ever asks it "may I do protected work now" (Held) right
// before touching the register, so a recipe's bugs show up as register
// writes from two holders, never hidden by extra checks in the worker.
//
// The config workload's clients (ConfigClient, config.go) live here too:
// they share the session plumbing (session events, the captured password,
// credentials) and are chosen by name from their own registry.
package recipes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// Grant is one lock held: enough to fence with it and to tell it apart from
// other grants of the same key.
type Grant struct {
	Key  string
	Node string
	// Token is the fencing token (czxid, or the sequence number).
	Token int64
	// Session is the ZooKeeper session id the grant was taken under; the
	// grant dies with it.
	Session int64
}

// Session states carried by SessionEvent. The strings are those of the
// worker protocol so the worker forwards them unchanged.
const (
	StateConnected      = "connected"
	StateDisconnected   = "disconnected"
	StateExpired        = "expired"
	StateSessionChanged = "session-changed"
	// StateClosed: the session was ended by this client itself (Close),
	// not lost to a fault. Its grants are reported lost with it, after the
	// close, so that the history shows where they ended; the checkers do
	// not take it as an excuse the way they take expired.
	StateClosed = "closed"
)

// SessionEvent is a session change or, with Lost set, a lock the recipe
// learned it no longer holds (State says why).
type SessionEvent struct {
	State   string
	Session int64
	// Lost is the grant revoked by this event; nil for a plain session
	// change.
	Lost *Grant
}

// Lock is a distributed lock recipe. Acquire and Release may block on the
// coordination service, so they take a context; Held never blocks because
// the worker calls it right before every protected operation.
type Lock interface {
	// Acquire waits up to timeout for the lock on key. Any error means the
	// lock was not granted; unless errors.Is(err, ErrUnknown), the caller
	// may also rely on the recipe's queue entry being gone.
	Acquire(ctx context.Context, key string, timeout time.Duration) (Grant, error)
	// Release gives the lock up: nil (the node existed until this release
	// deleted it), ErrNotHeld (never held or already released), ErrRevoked
	// (lost to a session expiry before the release sent its delete), or an
	// error wrapping ErrUnknown (for example a delete whose reply was lost
	// before the session expired). After ErrUnknown the recipe still counts
	// the grant as possibly held: it reports it lost when its session
	// expires, changes or is closed.
	Release(ctx context.Context, key string) error
	// Held reports whether the caller holds key and its session is
	// connected right now, i.e. may do protected work.
	Held(key string) (Grant, bool)
	// Events delivers session changes and lost locks in order; it is closed
	// by Close. The recipe buffers without bound, so a slow reader never
	// stalls the client library.
	Events() <-chan SessionEvent
	// Close ends the session; the server then drops what it still holds.
	// Once the close is done it reports a StateClosed session event and a
	// StateClosed lost event for every grant it still held (or whose
	// release was unknown), then closes Events.
	Close() error
}

// Errors of Acquire and Release.
var (
	// ErrTimeout: the acquire timed out; the lock was certainly not
	// granted and the queue entry is removed.
	ErrTimeout = errors.New("acquire timed out")
	// ErrNotHeld: release of a key not held.
	ErrNotHeld = errors.New("not held")
	// ErrRevoked: release of a lock that was already lost (session
	// expired). It is also an ErrNotHeld.
	ErrRevoked = fmt.Errorf("%w: revoked", ErrNotHeld)
	// ErrAlreadyHeld: acquire of a key this recipe already holds or is
	// acquiring; recipes are not reentrant.
	ErrAlreadyHeld = errors.New("already holding or acquiring")
	// ErrUnknown marks outcomes the recipe cannot know (a request whose
	// reply was lost); the caller must record them as info.
	ErrUnknown = errors.New("outcome unknown")
)

// Unknown wraps err as an unknown outcome of op: what a recipe returns
// for a request whose answer it cannot know (ErrUnknown).
func Unknown(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnknown, err)
}

// Config configures any recipe; a recipe ignores what it does not use.
type Config struct {
	Servers        []string
	SessionTimeout time.Duration
	// Root is the persistent parent of the per-key lock directories.
	Root string
	// Token is TokenCzxid or TokenSeq.
	Token string
	// Auth is the credential the client presents (AuthEnv); with one, the
	// nodes it creates carry Auth.ACL. The zero value is anonymous.
	Auth   Auth
	Logger *slog.Logger
}

// Token kinds.
const (
	// TokenCzxid fences with the lock node's creation zxid: globally
	// increasing, so it survives deleting and recreating the key's parent.
	TokenCzxid = "czxid"
	// TokenSeq fences with the sequence suffix: increasing per parent only.
	TokenSeq = "seq"
)

// DefaultRoot is where locks live when Config.Root is empty.
const DefaultRoot = "/locks/inventory"

// Factory builds a recipe from its configuration.
type Factory func(Config) (Lock, error)

// lockRecipes are the lock workload's recipes, by name.
var lockRecipes = newRegistry[Factory]("recipe")

// Register makes a recipe available to New by name; recipes call it from
// init so adding one is adding one file.
func Register(name string, f Factory) { lockRecipes.add(name, f) }

// Names lists the registered recipes, sorted.
func Names() []string { return lockRecipes.names() }

// New builds the recipe registered as name, ZooKeeper's or another
// service's.
func New(name string, cfg Config) (Lock, error) {
	if svc := ServiceOf(name); svc != ServiceZooKeeper {
		f, err := serviceLocks[svc].get(name)
		if err != nil {
			return nil, err
		}
		return f(cfg)
	}
	f, err := lockRecipes.get(name)
	if err != nil {
		return nil, err
	}
	return f(cfg)
}

// Lock services (--service) whose recipes are not ZooKeeper's. The names
// are the harness's (cluster.ZooKeeper, ...), repeated here because
// recipes sits below cluster/.
const (
	ServiceZooKeeper = "zookeeper"
	ServiceRedis     = "redis"
	ServiceEtcd      = "etcd"
)

var (
	// serviceLocks are the lock recipes of the other services, by
	// service; serviceOf maps each of their names to its service.
	serviceLocks = map[string]*registry[Factory]{
		ServiceRedis: newRegistry[Factory]("redis recipe"),
		ServiceEtcd:  newRegistry[Factory]("etcd recipe"),
	}
	serviceOfMu sync.Mutex
	serviceOf   = map[string]string{}
)

// RegisterService makes a lock recipe of another service than ZooKeeper
// available to New by name; its names are not among Names (ZooKeeper's).
func RegisterService(service, name string, f Factory) {
	serviceLocks[service].add(name, f)
	serviceOfMu.Lock()
	defer serviceOfMu.Unlock()
	serviceOf[name] = service
}

// ServiceOf is the service a lock recipe runs on (ZooKeeper for every
// name not registered with RegisterService).
func ServiceOf(name string) string {
	serviceOfMu.Lock()
	defer serviceOfMu.Unlock()
	if s, ok := serviceOf[name]; ok {
		return s
	}
	return ServiceZooKeeper
}

// NamesForService lists the lock recipes of service ("" is ZooKeeper).
func NamesForService(service string) ([]string, error) {
	switch service {
	case "", ServiceZooKeeper:
		return Names(), nil
	}
	r, ok := serviceLocks[service]
	if !ok {
		return nil, fmt.Errorf("unknown service %q (known: %s, %s, %s)", service, ServiceZooKeeper, ServiceRedis, ServiceEtcd)
	}
	return r.names(), nil
}

// Workloads a built-in recipe serves (`chaos-worker --workload`): each
// has its own recipes, and the same name (seed) may mean a recipe of each.
const (
	WorkloadLock   = "lock"
	WorkloadConfig = "config"
	// WorkloadElection runs for leader with the lock recipes: a
	// candidate's campaign is an acquire of the service's lock under the
	// election root (an application's leader election is the queue lock
	// recipe: docs/background.md#leader-election), so each lock recipe,
	// the zoo's included, is also an election recipe.
	WorkloadElection = "election"
)

// workloadRecipes maps each workload the built-in worker serves to the
// names of its recipes; the file of each workload's recipes registers it
// (RegisterWorkload), so a new workload adds no case here.
var workloadRecipes = newRegistry[func() []string]("workload")

// RegisterWorkload declares a workload the built-in recipes serve, with
// the function that lists its recipes. It panics on a name registered
// twice.
func RegisterWorkload(name string, names func() []string) { workloadRecipes.add(name, names) }

func init() { RegisterWorkload(WorkloadLock, Names) }

// Workloads lists the workloads the built-in recipes serve, sorted.
func Workloads() []string { return workloadRecipes.names() }

// NamesFor lists the recipes of workload ("" is the lock workload).
func NamesFor(workload string) ([]string, error) {
	names, err := workloadRecipes.get(cmp.Or(workload, WorkloadLock))
	if err != nil {
		return nil, err
	}
	return names(), nil
}

// registry maps names to the factories of one workload's recipes; recipes
// fill it from init.
type registry[F any] struct {
	what string
	mu   sync.Mutex
	m    map[string]F
}

func newRegistry[F any](what string) *registry[F] {
	return &registry[F]{what: what, m: map[string]F{}}
}

func (r *registry[F]) add(name string, f F) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic("recipes: duplicate " + r.what + " " + name)
	}
	r.m[name] = f
}

func (r *registry[F]) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *registry[F]) get(name string) (F, error) {
	r.mu.Lock()
	f, ok := r.m[name]
	r.mu.Unlock()
	if !ok {
		return f, fmt.Errorf("unknown %s %q (known: %s)", r.what, name, strings.Join(r.names(), ", "))
	}
	return f, nil
}
