// Command chaos-worker is the built-in worker: one worker process of a
// zkchaos run, the worker protocol on stdin/stdout (docs/worker-protocol.md),
// logs on stderr. The controller starts one per logical process, for every
// built-in recipe (client/subjects), from the folder of its own executable.
//
//	chaos-worker --zk HOST:PORT,... --register URL --recipe NAME [flags]
//	chaos-worker --service redis|etcd --servers HOST:PORT,... --register URL [flags]
//
// It is a binary of its own, not a subcommand of chaos, because a run
// starts workers again and again (one per client, and a fresh one for
// every retired process) and each start pays the binary's package
// initialisation before it can say hello: this one links only the
// protocol, the recipes and the resources' clients (docs/measurements.md,
// "Worker start").
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/internal/cpuprofile"
)

// Exit codes: 1 the worker stopped on an error after its hello, 255 bad
// input (the problem on the first line of stderr; nothing connected).
const (
	exitFailed  = 1
	exitBadArgs = 255
)

func main() {
	// SIGINT or SIGTERM ends the serving loop as the end of stdin does:
	// the session is closed and the grants it ended are reported. The
	// controller ends a worker by closing its stdin; a signal is for a
	// worker run by hand.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the worker with its command line, input and outputs given, so
// tests drive it without a process; it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, code, ok := parse(args, stderr)
	if !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("process", cfg.Process, "pid", os.Getpid())
	if dir := os.Getenv(worker.ProfileEnv); dir != "" {
		// chaos bench --profile: where a worker's time goes.
		stop, err := cpuprofile.Start(filepath.Join(dir, fmt.Sprintf("worker-%d.cpu.pprof", cfg.Process)))
		if err != nil {
			fmt.Fprintf(stderr, "chaos-worker: %v\n", err)
			return exitBadArgs
		}
		defer stop()
	}
	log.Info("credentials from the environment", "zk_auth", cfg.ZKAuth, "register_secret", cfg.RegisterSecret != "")
	cfg.Logger = log
	if err := worker.Run(ctx, cfg, stdin, stdout); err != nil {
		log.Error("worker stopped", "err", err)
		return exitFailed
	}
	return 0
}
