package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/run/bench"
)

// cmdWorker runs one worker process: the protocol on stdin/stdout, logs on
// stderr. The controller starts one per logical process.
func cmdWorker(ctx context.Context, args []string) int {
	return runWorker(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}

func runWorker(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	zkList := fs.String("zk", "", "ZooKeeper servers, host:port,... (required on ZooKeeper)")
	service := fs.String("service", recipes.ServiceZooKeeper, "lock service: "+recipes.ServiceZooKeeper+", "+recipes.ServiceRedis+" or "+recipes.ServiceEtcd+" (lock workload only)")
	servers := fs.String("servers", "", "with --service redis|etcd: the service's servers, host:port,... (required there, instead of --zk)")
	reg := fs.String("register", "", "register base URL, e.g. http://127.0.0.1:7000 (required)")
	pg := fs.String("postgres", "", "PostgreSQL resource DSN, postgres://USER@HOST:PORT/DB (lock workload; instead of --register; password from "+register.SecretEnv+")")
	process := fs.Int("process", 0, "logical process number (reported to the register)")
	sessionTimeout := fs.Duration("session-timeout", 3*time.Second, "ZooKeeper session timeout")
	workload := fs.String("workload", recipes.WorkloadLock, "workload: "+recipes.WorkloadLock+", "+recipes.WorkloadConfig+" or "+recipes.WorkloadElection)
	recipe := fs.String("recipe", "seed", "recipe: for lock "+strings.Join(recipes.Names(), ", ")+
		"; for config "+strings.Join(recipes.ConfigNames(), ", "))
	token := fs.String("token", recipes.TokenCzxid, "fencing token: czxid or seq")
	root := fs.String("root", recipes.DefaultRoot, "persistent parent of the lock nodes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: chaos worker (--zk HOST:PORT,... | --service redis|etcd --servers HOST:PORT,...) (--register URL | --postgres DSN) [--workload lock|config|election] [--process N] [--session-timeout D] [--recipe NAME] [--token czxid|seq] [--root PATH]")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return parseExit(err)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "chaos worker: "+format+"\n", a...)
		return 255
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	addrs, names, msg := workerServers(*service, *zkList, *servers, *workload)
	if msg != "" {
		return bad("%s", msg)
	}
	// The config workload has no register; a lock worker cannot work
	// without one.
	needReg := *workload != recipes.WorkloadConfig && *pg == ""
	if *pg != "" {
		if *workload != recipes.WorkloadLock {
			return bad("--postgres: only the %s workload", recipes.WorkloadLock)
		}
		if *reg != "" {
			return bad("--postgres and --register: give one")
		}
		if _, err := pgfence.ConnConfig(*pg, "", time.Second); err != nil {
			return bad("--postgres: %v", err)
		}
	}
	if u, err := url.Parse(*reg); (*reg == "" && needReg) || (*reg != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "")) {
		return bad("--register must be an http(s) URL, got %q", *reg)
	}
	if *process < 0 {
		return bad("--process must be >= 0, got %d", *process)
	}
	if *sessionTimeout <= 0 {
		return bad("--session-timeout must be positive, got %s", *sessionTimeout)
	}
	if !flagSet(fs, "recipe") && *service != recipes.ServiceZooKeeper {
		*recipe = names[0]
	}
	if !contains(names, *recipe) {
		return bad("unknown --recipe %q for workload %s (known: %s)", *recipe, *workload, strings.Join(names, ", "))
	}
	if *token != recipes.TokenCzxid && *token != recipes.TokenSeq {
		return bad("--token must be czxid or seq, got %q", *token)
	}
	if !strings.HasPrefix(*root, "/") || (len(*root) > 1 && strings.HasSuffix(*root, "/")) {
		return bad("--root must be an absolute ZooKeeper path, got %q", *root)
	}

	// Credentials come from the environment, never from flags (see
	// docs/worker-protocol.md, "Credentials").
	auth, err := recipes.ParseAuth(os.Getenv(recipes.AuthEnv))
	if err != nil {
		return bad("%v", err)
	}

	regSecret := os.Getenv(register.SecretEnv)

	log := slog.New(slog.NewTextHandler(stderr, nil)).With("process", *process, "pid", os.Getpid())
	if dir := os.Getenv(bench.WorkerProfileEnv); dir != "" {
		// chaos bench --profile: where a worker's time goes.
		stop, err := bench.StartProfile(filepath.Join(dir, fmt.Sprintf("worker-%d.cpu.pprof", *process)))
		if err != nil {
			return bad("%v", err)
		}
		defer stop()
	}
	log.Info("credentials from the environment", "zk_auth", auth, "register_secret", regSecret != "")
	err = worker.Run(ctx, worker.Config{
		ZK:             addrs,
		Register:       *reg,
		Postgres:       *pg,
		Process:        *process,
		SessionTimeout: *sessionTimeout,
		Workload:       *workload,
		Recipe:         *recipe,
		Token:          *token,
		Root:           *root,
		ZKAuth:         auth,
		RegisterSecret: regSecret,
		Logger:         log,
	}, stdin, stdout)
	if err != nil {
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
