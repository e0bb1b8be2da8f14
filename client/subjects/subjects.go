// Package subjects turns a --recipe value into the command line of a worker
// process, so that everything the harness can test is started the same way
// and speaks the same protocol (docs/worker-protocol.md):
//
//   - a built-in recipe NAME: `chaos-worker --recipe NAME <flags>`, the
//     built-in worker (cmd/chaos-worker) found beside the chaos binary
//     (WorkerPath), and refused when it is not there;
//   - `curator`: the Java worker of Apache Curator's InterProcessMutex
//     (lock workload) or LeaderLatch (election workload), compiled on
//     first use (see curator.go) and started as an exec: subject, the
//     proof that the exec path is enough for a real client;
//   - `curator-selector`: the same Java worker serving the election with
//     Curator's LeaderSelector instead (election workload only: it is no
//     lock recipe);
//   - `kazoo`: the Python worker of kazoo's Lock recipe (lock workload
//     only), run by /usr/bin/python3 directly (see kazoo.go), the protocol
//     from a third language;
//   - `exec:PATH [ARGS]`: any executable, PATH and ARGS as given (split on
//     white space, no quoting), with the protocol flags appended.
//
// The worker must be the process the command starts (no shell in between):
// the nemesis pauses the PID it gets, and a paused shell would leave the
// real client running.
package subjects

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	// The controller knows the other services' recipes by name; the
	// ZooKeeper worker binary does not link them (cmd/chaos-worker).
	_ "github.com/zkchaos/zkchaos/client/recipes/leased"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Flags are the start-up flags of the worker protocol.
type Flags struct {
	ZK       string // host:port,...
	Register string // base URL
	// Postgres is the DSN of the PostgreSQL resource (--resource
	// postgres): given instead of Register, only to built-in workers
	// (see Builtin).
	Postgres       string
	Process        int
	SessionTimeout time.Duration
	Token          string // czxid or seq
	Root           string
	// Workload is the workload the worker serves (recipes.WorkloadLock,
	// WorkloadConfig); "" is lock, and is not passed, so a worker that
	// predates workloads still starts.
	Workload string
	// Service is the lock service (recipes.ServiceRedis, ServiceEtcd);
	// "" is ZooKeeper, and is not passed. With a service, ZK holds its
	// servers' client addresses and is passed as --servers instead of
	// --zk, with --service NAME: a ZooKeeper worker is never handed
	// addresses it would take for an ensemble.
	Service string
}

// Args renders the flags in the protocol's form, --name value.
func (f Flags) Args() []string {
	servers := []string{"--zk", f.ZK}
	if f.Service != "" {
		servers = []string{"--service", f.Service, "--servers", f.ZK}
	}
	where := []string{"--register", f.Register}
	if f.Postgres != "" {
		where = []string{"--postgres", f.Postgres}
	}
	args := append(append(servers, where...), "--process", strconv.Itoa(f.Process),
		"--session-timeout", f.SessionTimeout.String(), "--token", f.Token, "--root", f.Root)
	if f.Workload != "" {
		args = append(args, "--workload", f.Workload)
	}
	return args
}

// ExecPrefix starts an exec: subject.
const ExecPrefix = "exec:"

// Curator is the name of the Curator subject.
const Curator = "curator"

// CuratorSelector is the name of the Curator LeaderSelector subject.
const CuratorSelector = "curator-selector"

// curatorSubject is one way to run the Curator worker: the workloads it
// serves ("" is lock) and the arguments that pick its recipe (before the
// protocol flags; not protocol flags themselves).
type curatorSubject struct {
	workloads []string
	args      []string
	serves    string // for the error of another workload
}

// curatorSubjects: InterProcessMutex for the lock and LeaderLatch for the
// election (curator); LeaderSelector for the election (curator-selector),
// which has no lock to offer, so the lock workload refuses it.
var curatorSubjects = map[string]curatorSubject{
	Curator: {workloads: []string{"", recipes.WorkloadLock, recipes.WorkloadElection},
		serves: "the " + recipes.WorkloadLock + " and " + recipes.WorkloadElection + " workloads"},
	CuratorSelector: {workloads: []string{recipes.WorkloadElection}, args: []string{"--curator-recipe", "selector"},
		serves: "the " + recipes.WorkloadElection + " workload (LeaderSelector is an election recipe; the lock's Curator subject is " + Curator + ")"},
}

// Validate checks a --recipe value of the lock workload without starting
// or compiling anything, so a bad value costs nothing.
func Validate(spec string) error { return ValidateFor("", spec) }

// ValidateFor is Validate for the workload's recipes ("" is lock): a
// built-in name must be one of that workload's recipes.
func ValidateFor(workload, spec string) error {
	_, _, err := parse(workload, "", spec)
	return err
}

// ValidateService is ValidateFor on a lock service ("" or zookeeper is
// ZooKeeper): a built-in name must be one of that service's recipes, and
// the Curator subjects are ZooKeeper's.
func ValidateService(workload, service, spec string) error {
	_, _, err := parse(workload, service, spec)
	return err
}

// Builtin reports whether spec is one of the workload's built-in recipes
// (run by chaos-worker), the only subjects that take --postgres.
func Builtin(workload, spec string) bool {
	k, _, err := parse(workload, "", spec)
	return err == nil && k == kindBuiltin
}

// Names lists the built-in subjects, for help texts.
func Names() []string {
	return append(recipes.Names(), Curator, CuratorSelector, Kazoo, ExecPrefix+"PATH [ARGS]")
}

// Command returns the program and arguments that start one worker for the
// subject spec. exe is the chaos binary: a built-in recipe runs the
// built-in worker beside it (WorkerPath), and one that is missing is an
// error naming it and how to build it. The first
// call for curator (or curator-selector) compiles the Java worker, which
// takes a few seconds; the result is cached on disk and in the process.
// The first call for kazoo checks that the interpreter imports kazoo.
//
// A built-in recipe is looked up among f.Workload's recipes.
func Command(exe, spec string, f Flags) (string, []string, error) {
	kind, rest, err := parse(f.Workload, f.Service, spec)
	if err != nil {
		return "", nil, err
	}
	switch kind {
	case kindBuiltin:
		prog, err := builtinWorker(exe, f.Service)
		if err != nil {
			return "", nil, err
		}
		return prog, append(f.Args(), "--recipe", rest[0]), nil
	case kindCurator:
		prog, args, err := curatorCommand()
		if err != nil {
			return "", nil, fmt.Errorf("subject %s: %w", spec, err)
		}
		return prog, append(append(args, rest...), f.Args()...), nil
	case kindKazoo:
		prog, args, err := kazooCommand()
		if err != nil {
			return "", nil, fmt.Errorf("subject %s: %w", spec, err)
		}
		return prog, append(args, f.Args()...), nil
	default:
		return rest[0], append(slices.Clone(rest[1:]), f.Args()...), nil
	}
}

// WorkerBinary is the file name of the built-in worker (cmd/chaos-worker).
const WorkerBinary = "chaos-worker"

// WorkerPath is where the built-in worker of the chaos binary exe is: in
// the same folder, where `make build` puts both. It is a binary of its own
// so that a worker starts without the controller's packages to initialise
// (docs/measurements.md, "Worker start").
func WorkerPath(exe string) string { return filepath.Join(filepath.Dir(exe), WorkerBinary) }

// ServicesWorkerBinary is the file name of the built-in worker that also
// links the recipes of the services other than ZooKeeper
// (cmd/chaos-worker-services). Nothing starts it by name: chaos-worker
// hands such a worker over to it, in the same process. Command only
// checks that it is there, so that a run on such a service is refused
// before anything starts.
const ServicesWorkerBinary = "chaos-worker-services"

// builtinWorker is WorkerPath(exe) when it is an executable file (and,
// for a service other than ZooKeeper, ServicesWorkerBinary beside it
// too), or the error that says which is missing.
func builtinWorker(exe, service string) (string, error) {
	prog := WorkerPath(exe)
	need := []string{prog}
	if service != "" && service != recipes.ServiceZooKeeper {
		need = append(need, filepath.Join(filepath.Dir(prog), ServicesWorkerBinary))
	}
	for _, p := range need {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("the built-in worker %s is missing (`make build` builds it beside %s)", p, filepath.Base(exe))
		}
	}
	return prog, nil
}

type kind int

const (
	kindBuiltin kind = iota
	kindCurator
	kindKazoo
	kindExec
)

// parse classifies spec; rest is the recipe name (builtin), the
// arguments that pick the Curator worker's recipe (curator), nothing
// (kazoo), or the absolute program and its arguments (exec).
func parse(workload, service, spec string) (kind, []string, error) {
	builtin, err := recipes.NamesFor(workload)
	if err != nil {
		return 0, nil, err
	}
	zk := service == "" || service == recipes.ServiceZooKeeper
	if !zk {
		if builtin, err = recipes.NamesForService(service); err != nil {
			return 0, nil, err
		}
	}
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return 0, nil, errors.New("empty subject")
	case !zk && !strings.HasPrefix(spec, ExecPrefix) && !slices.Contains(builtin, spec):
		return 0, nil, fmt.Errorf("subject %q does not run on %s (its built-in recipes: %s; or %sPATH [ARGS])",
			spec, service, strings.Join(builtin, ", "), ExecPrefix)
	case zk && recipes.ServiceOf(spec) != recipes.ServiceZooKeeper:
		return 0, nil, fmt.Errorf("subject %q is a recipe of %s %s, and this run is on zookeeper", spec, setting.Name("Service"), recipes.ServiceOf(spec))
	case curatorSubjects[spec].serves != "":
		c := curatorSubjects[spec]
		if !slices.Contains(c.workloads, workload) {
			return 0, nil, fmt.Errorf("subject %s serves only %s", spec, c.serves)
		}
		return kindCurator, slices.Clone(c.args), nil
	case spec == Kazoo:
		if workload != "" && workload != recipes.WorkloadLock {
			return 0, nil, fmt.Errorf("subject %s serves only the %s workload (kazoo's Lock recipe)", spec, recipes.WorkloadLock)
		}
		return kindKazoo, nil, nil
	case strings.HasPrefix(spec, ExecPrefix):
		fields := strings.Fields(strings.TrimPrefix(spec, ExecPrefix))
		if len(fields) == 0 {
			return 0, nil, fmt.Errorf("subject %q: exec: needs a program", spec)
		}
		prog, err := executable(fields[0])
		if err != nil {
			return 0, nil, fmt.Errorf("subject %q: %w", spec, err)
		}
		return kindExec, append([]string{prog}, fields[1:]...), nil
	case slices.Contains(builtin, spec):
		return kindBuiltin, []string{spec}, nil
	}
	return 0, nil, fmt.Errorf("unknown subject %q (built-in recipes: %s; or %s, %s (election), %s (lock), or %sPATH [ARGS])",
		spec, strings.Join(builtin, ", "), Curator, CuratorSelector, Kazoo, ExecPrefix)
}

// executable resolves prog to an absolute path of an executable file: the
// worker runs in another network namespace, and a relative name would be
// looked up wherever that happens to start it.
func executable(prog string) (string, error) {
	if !strings.Contains(prog, "/") {
		return "", fmt.Errorf("exec: %q: give a path (./%s or an absolute path), not a name to look up", prog, prog)
	}
	abs, err := filepath.Abs(prog)
	if err != nil {
		return "", fmt.Errorf("exec: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("exec: %w", err)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("exec: %s is not an executable file", abs)
	}
	return abs, nil
}
