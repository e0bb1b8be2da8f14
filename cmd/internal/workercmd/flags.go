package workercmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/resource/register"
)

// workerFlags are the worker's flags as parsed: the protocol's start-up
// flags (client/subjects.Flags renders them) and --recipe.
type workerFlags struct {
	zk, service, servers, register, postgres string
	workload, recipe, token, root            string
	process                                  int
	sessionTimeout                           time.Duration
}

// parse reads the command line into the worker's configuration (without
// its logger). When ok is false, code is the exit code and stderr has
// said why: the usage for -h (0), else the problem on the first line
// (255). Go's flag package reads -name and --name alike, as chaos's
// command line does (cmd/chaos's longFlags), and words its mistakes as
// chaos's do.
func parse(args []string, stderr io.Writer) (cfg worker.Config, code int, ok bool) {
	fs := flag.NewFlagSet("chaos-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: chaos-worker (--zk HOST:PORT,... | --service redis|etcd --servers HOST:PORT,...) (--register URL | --postgres DSN) [flags]")
			fs.PrintDefaults()
			return worker.Config{}, 0, false
		}
		return worker.Config{}, mistake(stderr, err), false
	}
	recipeSet := false
	fs.Visit(func(fl *flag.Flag) { recipeSet = recipeSet || fl.Name == "recipe" })
	cfg, err := f.config(fs.Args(), recipeSet)
	if err != nil {
		return worker.Config{}, mistake(stderr, err), false
	}
	return cfg, 0, true
}

// mistake reports bad input: the problem on the first line, a pointer to
// -h on the second. It returns the exit code of bad input.
func mistake(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "chaos-worker: %v\nchaos-worker: see 'chaos-worker -h' for the flags\n", err)
	return ExitBadArgs
}

func defineFlags(fs *flag.FlagSet) *workerFlags {
	f := &workerFlags{}
	fs.StringVar(&f.zk, "zk", "", "ZooKeeper servers, host:port,... (required on ZooKeeper)")
	fs.StringVar(&f.service, "service", recipes.ServiceZooKeeper, "lock service: "+recipes.ServiceZooKeeper+", "+recipes.ServiceRedis+" or "+recipes.ServiceEtcd+" (lock workload only)")
	fs.StringVar(&f.servers, "servers", "", "with --service redis|etcd: the service's servers, host:port,... (required there, instead of --zk)")
	fs.StringVar(&f.register, "register", "", "register base URL, e.g. http://127.0.0.1:7000 (required)")
	fs.StringVar(&f.postgres, "postgres", "", "PostgreSQL resource DSN, postgres://USER@HOST:PORT/DB (lock workload; instead of --register; password from "+register.SecretEnv+")")
	fs.IntVar(&f.process, "process", 0, "logical process number (reported to the register)")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", 3*time.Second, "ZooKeeper session timeout")
	fs.StringVar(&f.workload, "workload", recipes.WorkloadLock, "workload: "+recipes.WorkloadLock+", "+recipes.WorkloadConfig+" or "+recipes.WorkloadElection)
	fs.StringVar(&f.recipe, "recipe", "seed", "recipe: for lock "+strings.Join(recipes.Names(), ", ")+
		"; for config "+strings.Join(recipes.ConfigNames(), ", "))
	fs.StringVar(&f.token, "token", recipes.TokenCzxid, "fencing token: czxid or seq")
	fs.StringVar(&f.root, "root", recipes.DefaultRoot, "persistent parent of the lock nodes")
	return f
}

// config checks the flags together and makes the worker's configuration
// (without its logger), or says what is wrong. recipeSet says whether
// --recipe was given: another service's default recipe is its first.
func (f *workerFlags) config(args []string, recipeSet bool) (worker.Config, error) {
	if len(args) > 0 {
		return worker.Config{}, fmt.Errorf("unexpected arguments %q", args)
	}
	addrs, names, msg := workerServers(f.service, f.zk, f.servers, f.workload)
	if msg != "" {
		return worker.Config{}, errors.New(msg)
	}
	if err := f.checkResource(); err != nil {
		return worker.Config{}, err
	}
	recipe := f.recipe
	if !recipeSet && f.service != recipes.ServiceZooKeeper {
		recipe = names[0]
	}
	if err := f.checkClient(names, recipe); err != nil {
		return worker.Config{}, err
	}
	// Credentials come from the environment, never from flags (see
	// docs/worker-protocol.md, "Credentials").
	auth, err := recipes.ParseAuth(os.Getenv(recipes.AuthEnv))
	if err != nil {
		return worker.Config{}, err
	}
	return worker.Config{ZK: addrs, Register: f.register, Postgres: f.postgres, Process: f.process,
		SessionTimeout: f.sessionTimeout, Workload: f.workload, Recipe: recipe, Token: f.token, Root: f.root,
		ZKAuth: auth, RegisterSecret: os.Getenv(register.SecretEnv)}, nil
}

// checkResource checks --register and --postgres: the config workload
// has no register; a lock worker cannot work without one (or PostgreSQL).
func (f *workerFlags) checkResource() error {
	needReg := f.workload != recipes.WorkloadConfig && f.postgres == ""
	if f.postgres != "" {
		if f.workload != recipes.WorkloadLock {
			return fmt.Errorf("--postgres: only the %s workload", recipes.WorkloadLock)
		}
		if f.register != "" {
			return errors.New("--postgres and --register: give one")
		}
		if _, err := pgfence.ConnConfig(f.postgres, "", time.Second); err != nil {
			return fmt.Errorf("--postgres: %w", err)
		}
	}
	reg := f.register
	if u, err := url.Parse(reg); (reg == "" && needReg) || (reg != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "")) {
		return fmt.Errorf("--register must be an http(s) URL, got %q", reg)
	}
	return nil
}

// checkClient checks the flags of the client itself.
func (f *workerFlags) checkClient(names []string, recipe string) error {
	switch {
	case f.process < 0:
		return fmt.Errorf("--process must be >= 0, got %d", f.process)
	case f.sessionTimeout <= 0:
		return fmt.Errorf("--session-timeout must be positive, got %s", f.sessionTimeout)
	case !slices.Contains(names, recipe):
		return fmt.Errorf("unknown --recipe %q for workload %s (known: %s)", recipe, f.workload, strings.Join(names, ", "))
	case f.token != recipes.TokenCzxid && f.token != recipes.TokenSeq:
		return fmt.Errorf("--token must be czxid or seq, got %q", f.token)
	case !strings.HasPrefix(f.root, "/") || (len(f.root) > 1 && strings.HasSuffix(f.root, "/")):
		return fmt.Errorf("--root must be an absolute ZooKeeper path, got %q", f.root)
	}
	return nil
}

// workerServers checks the service, its servers' flag and the workload
// together, and returns the addresses and the recipes the worker may run,
// or what is wrong.
func workerServers(service, zkList, servers, workload string) ([]string, []string, string) {
	if service == recipes.ServiceZooKeeper {
		if servers != "" {
			return nil, nil, "--servers is for --service redis|etcd; ZooKeeper's servers are --zk"
		}
		addrs, err := parseServers(zkList)
		if err != nil {
			return nil, nil, "--zk: " + err.Error()
		}
		names, err := recipes.NamesFor(workload)
		if err != nil {
			return nil, nil, "--workload: " + err.Error()
		}
		return addrs, names, ""
	}
	names, err := recipes.NamesForService(service)
	if err != nil {
		return nil, nil, "--service: " + err.Error()
	}
	if workload != recipes.WorkloadLock {
		return nil, nil, fmt.Sprintf("--service %s serves the %s workload only, not %s", service, recipes.WorkloadLock, workload)
	}
	if zkList != "" {
		return nil, nil, fmt.Sprintf("--zk is ZooKeeper's; --service %s takes its servers as --servers", service)
	}
	addrs, err := parseServers(servers)
	if err != nil {
		return nil, nil, "--servers: " + err.Error()
	}
	return addrs, names, ""
}

// parseServers splits and checks a host:port list.
func parseServers(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("required")
	}
	var out []string
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		if _, port, err := net.SplitHostPort(hp); err != nil || port == "" {
			return nil, fmt.Errorf("bad host:port %q", hp)
		}
		out = append(out, hp)
	}
	return out, nil
}
