package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/run/bench"
)

// runWorker is `chaos worker` with args, input and outputs given.
func runWorker(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execute(ctx, context.Background(), append([]string{"worker"}, args...), streams{in: stdin, out: stdout, err: stderr})
}

// workerFlags are chaos worker's flags as parsed.
type workerFlags struct {
	zk, service, servers, register, postgres string
	workload, recipe, token, root            string
	process                                  int
	sessionTimeout                           time.Duration
}

// newWorkerCmd is `chaos worker`: one worker process, the protocol on
// stdin/stdout, logs on stderr. The controller starts one per logical
// process.
func newWorkerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "worker (--zk HOST:PORT,... | --service redis|etcd --servers HOST:PORT,...) (--register URL | --postgres DSN) [flags]",
		Short:  "a worker process speaking the worker protocol (started by chaos run)",
		Hidden: true,
	}
	f := defineWorkerFlags(c.Flags())
	c.RunE = func(c *cobra.Command, args []string) error {
		cfg, err := f.config(c.Flags(), args)
		if err != nil {
			fmt.Fprintf(c.ErrOrStderr(), "chaos worker: %v\n", err)
			return status(exitHarness)
		}
		return status(work(c, cfg))
	}
	return c
}

func defineWorkerFlags(fs *pflag.FlagSet) *workerFlags {
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
// (without its logger), or says what is wrong.
func (f *workerFlags) config(fs *pflag.FlagSet, args []string) (worker.Config, error) {
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
	if !fs.Changed("recipe") && f.service != recipes.ServiceZooKeeper {
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
	case !contains(names, recipe):
		return fmt.Errorf("unknown --recipe %q for workload %s (known: %s)", recipe, f.workload, strings.Join(names, ", "))
	case f.token != recipes.TokenCzxid && f.token != recipes.TokenSeq:
		return fmt.Errorf("--token must be czxid or seq, got %q", f.token)
	case !strings.HasPrefix(f.root, "/") || (len(f.root) > 1 && strings.HasSuffix(f.root, "/")):
		return fmt.Errorf("--root must be an absolute ZooKeeper path, got %q", f.root)
	}
	return nil
}

// work runs the worker on the command's input and outputs.
func work(c *cobra.Command, cfg worker.Config) int {
	stderr := c.ErrOrStderr()
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("process", cfg.Process, "pid", os.Getpid())
	if dir := os.Getenv(bench.WorkerProfileEnv); dir != "" {
		// chaos bench --profile: where a worker's time goes.
		stop, err := bench.StartProfile(filepath.Join(dir, fmt.Sprintf("worker-%d.cpu.pprof", cfg.Process)))
		if err != nil {
			fmt.Fprintf(stderr, "chaos worker: %v\n", err)
			return exitHarness
		}
		defer stop()
	}
	log.Info("credentials from the environment", "zk_auth", cfg.ZKAuth, "register_secret", cfg.RegisterSecret != "")
	cfg.Logger = log
	if err := worker.Run(c.Context(), cfg, c.InOrStdin(), c.OutOrStdout()); err != nil {
		log.Error("worker stopped", "err", err)
		return 1
	}
	return 0
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
