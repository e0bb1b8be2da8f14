// Package workloads says what the clients of a run do (--workload): each
// workload drives Clients (the controller's view of its logical
// processes) through operations, tells the nemesis where a client is
// (Phase), names the znodes it needs, ends the run its own way (Final) and
// names the checkers that judge it. It neither records history nor knows
// about processes, which is the controller's job; the runner knows
// workloads only through the Workload interface.
package workloads

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Spec is what a workload is before a run's settings build it: its name,
// the checkers that judge it, the gate they decide the verdict by, and
// the standard cells `chaos gate` runs a subject of it through. Each
// workload registers its Spec from its own file.
type Spec interface {
	// Name is the --workload value.
	Name() string
	// Checkers judge the run (integrity first); DefaultGate names those
	// that decide the verdict when --gate is not given.
	Checkers() []checker.Checker
	DefaultGate() []string
	// GateCells are the standard cells of a correct subject of the
	// workload (chaos gate); none when the workload has no standard set
	// yet.
	GateCells() []GateCell
	// Traits are what else of a run the workload can have.
	Traits() Traits
}

// Traits are the run's settings a workload can have beyond ZooKeeper and
// the register; validation refuses the others' runs of them, naming the
// workloads that can (With).
type Traits struct {
	// OtherServices: its clients run on --service redis and etcd too.
	OtherServices bool
	// Postgres: --resource postgres serves its reads and writes.
	Postgres bool
	// UnderRunRoot: every znode of it is under its --lock-root, so a run
	// on a shared ensemble (--cluster external) can keep it under the
	// run's own subtree.
	UnderRunRoot bool
}

// GateCell is one standard gate cell: a run of the subject under the
// nemesis, with or without fencing, and the verdict each named checker
// must give.
type GateCell struct {
	Nemesis []string
	// Fenced is --fencing on.
	Fenced bool
	// Args are the cell's own `chaos run` flags, after the gate's run
	// length (a pause's hold, the work per task, the first fault).
	Args []string
	// Variant tells apart cells of one fault that differ only in Args; it
	// ends the cell's name.
	Variant string
	Expect  map[string]checker.Validity
	// Why says what the cell shows.
	Why string
	// Quick marks the cells of the smallest set (chaos gate --quick).
	Quick bool
}

// Workload is one kind of client work a run tests.
type Workload interface {
	Spec
	// Nodes are the znodes the controller creates before any client
	// starts (parents first), protected with the run's ACL under --acl on.
	Nodes() []Node
	// Prepare sets up the resource before any client starts (the
	// election's task table, which its Steps grow later); most workloads
	// need nothing.
	Prepare(ctx context.Context, r Resource) error
	// Step runs one unit of a client's work; the runner calls it in a
	// loop until the workload's time is up. It returns early after an info
	// completion (the process that performed it is retired).
	Step(ctx context.Context, c Client, r *rand.Rand)
	// Final runs after every fault was undone and the recovery time has
	// passed: the workload's last operations, so its checkers see the end
	// state (the lock: every key read from the register; config: one
	// last version, and the time for clients to apply it).
	Final(ctx context.Context, e End)
	// DefaultFaults is the --nemesis of a run that names none: the fault
	// that shows what the workload is about.
	DefaultFaults() []string
	// DefaultTiming is the session timeout and quiet time before the
	// first fault of a run that gives neither flag; zero fields keep the
	// run's defaults (runner.Defaults, tuned for the lock gate's speed).
	DefaultTiming() Timing
}

// Timing is a workload's own session timeout and first fault.
type Timing struct {
	SessionTimeout time.Duration
	FirstFault     time.Duration
}

// calibrated is the timing the config and election workloads were
// calibrated with: the config's convergence bound is two session
// timeouts, and the election's deposed-leader window (CURATOR-696) is
// timed against a 3 s session; at the lock gate's 1 s session a correct
// config client missed convergence in 1 run of 4 (a watcher applied no
// version), a false verdict, so these workloads keep it.
var calibrated = Timing{SessionTimeout: 3 * time.Second, FirstFault: 2 * time.Second}

// Node is a znode a workload needs, with its initial data.
type Node struct {
	Path string
	Data []byte
}

// Op is one operation to perform.
type Op struct {
	F     string
	Key   string
	Value *int64 // write, update: the value to write
	// Timeout bounds how long the worker may wait (acquire: for the
	// lock); the controller allows it on top of the operation timeout.
	Timeout time.Duration
	Work    time.Duration // write: the holder's work between its check and its write
	// Expected is the version an update is based on (config).
	Expected *int64
}

// Result is an operation's completion as the controller recorded it.
type Result struct {
	Type  history.Type // ok, fail or info
	Value *history.Value
	Error string
}

// Phase is where a client is in its critical section; the nemesis uses it
// to aim at the moment a pause does the most harm. A workload without a
// critical section (config) leaves every client Idle.
type Phase int

// Phases.
const (
	Idle Phase = iota
	// Holding: the client holds a privilege (a lock) under a token.
	Holding
	// Critical: the write is under way and the worker is doing its
	// protected work, having checked the lock: a pause now makes the write
	// that follows stale.
	Critical
)

// Client performs operations for one logical client. Do records the
// invocation and completion; a completion of type info retires the
// process (the next Do runs on a fresh one, with a new Process number).
type Client interface {
	Do(ctx context.Context, op Op) Result
	SetPhase(phase Phase, key string, token int64)
	// Index is the client's place among the run's clients (0..workers-1),
	// which a workload with roles (config's admins) decides them by.
	Index() int
	// Process is the logical process the next Do runs on.
	Process() int
}

// Resource is the run's fenced resource as a workload's Prepare sees it;
// a workload may keep it for the run (the election grows its table).
type Resource interface {
	// InitTasks adds the tasks service's task table does not have yet,
	// each PENDING (creating the table the first time); the others keep
	// their state, so an init of unknown outcome can be sent again.
	InitTasks(ctx context.Context, service string, tasks []string) error
	// Tasks are the tasks of service's table, each true when done
	// (SUCCEEDED); none before the first init. A resumed run's table
	// holds what its earlier segments added.
	Tasks(ctx context.Context, service string) (map[string]bool, error)
}

// End is what a workload's Final may use besides its clients.
type End interface {
	Clients() []Client
	// FinalRead reads key from the register directly, without a token
	// (resource/register/types.go), and records it as client c's final-read.
	FinalRead(ctx context.Context, c Client, key string)
	// Applied is the highest version of key that c's current process
	// reported applying (a config watcher's applied event), false when it
	// reported none.
	Applied(c Client, key string) (int64, bool)
}

// Settings are the run's flags a workload is built from; each workload
// takes the ones it uses.
type Settings struct {
	Workers        int
	Keys           int
	Hold           time.Duration
	Think          time.Duration
	AcquireTimeout time.Duration
	LockRoot       string
	SessionTimeout time.Duration
	// Admins is how many clients update the config (config workload).
	Admins int
	// Tasks is how many tasks the election's table starts with and
	// grows by.
	Tasks int
}

// kind is a registered workload: its Spec, and how a run's settings
// build it.
type kind struct {
	spec Spec
	mk   func(Settings) (Workload, error)
}

var (
	regMu    sync.Mutex
	registry = map[string]kind{}
)

// register adds a workload under its --workload name (spec's); each
// workload's file calls it from init. spec answers only the Spec's
// questions, which need no settings.
func register(spec Spec, mk func(Settings) (Workload, error)) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[spec.Name()]; dup {
		panic(fmt.Sprintf("workload %q registered twice", spec.Name()))
	}
	registry[spec.Name()] = kind{spec, mk}
}

// Names lists the --workload values, sorted.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func lookup(name string) (kind, error) {
	regMu.Lock()
	k, ok := registry[name]
	regMu.Unlock()
	if !ok {
		return k, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return k, nil
}

// Lookup is the named workload's Spec, for what needs no settings (its
// checkers, its gate, its gate cells).
func Lookup(name string) (Spec, error) {
	k, err := lookup(name)
	return k.spec, err
}

// New builds the named workload.
func New(name string, s Settings) (Workload, error) {
	k, err := lookup(name)
	if err != nil {
		return nil, err
	}
	return k.mk(s)
}

// CheckerNames lists the names of w's checkers, the names its gate may
// use.
func CheckerNames(w Spec) []string {
	var out []string
	for _, c := range w.Checkers() {
		out = append(out, c.Name)
	}
	return out
}

// TraitsOf are the named workload's Traits (none for an unknown name,
// which validation reports).
func TraitsOf(name string) Traits {
	spec, err := Lookup(name)
	if err != nil {
		return Traits{}
	}
	return spec.Traits()
}

// With lists the workloads whose Traits have has, for the messages that
// refuse the others.
func With(has func(Traits) bool) string {
	var out []string
	for _, n := range Names() {
		if has(TraitsOf(n)) {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// CheckersHelp lists every workload's checkers, the names a gate may use,
// as "config: a, b; election: c, d; lock: e, f" (for the help of --gate).
func CheckersHelp() string {
	var parts []string
	for _, n := range Names() {
		if spec, err := Lookup(n); err == nil {
			parts = append(parts, n+": "+strings.Join(CheckerNames(spec), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// ValidateGate rejects a gate naming a checker w does not have.
func ValidateGate(w Spec, gate []string) error {
	if err := checker.ValidateGate(gate, w.Checkers()); err != nil {
		return fmt.Errorf("the %s workload: %w", w.Name(), err)
	}
	return nil
}

func errAdmins(s Settings) error {
	return fmt.Errorf("%s %d: must be 1..%d with %s %d (at least one client must watch)",
		setting.Name("Admins"), s.Admins, max(s.Workers-1, 1), setting.Name("Workers"), s.Workers)
}
