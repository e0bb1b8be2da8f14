// Package workercmd is the built-in worker's command line, shared by its
// two binaries, which differ only in the recipes they link: chaos-worker
// (ZooKeeper's) and chaos-worker-services (those and the other services',
// client/recipes/leased). It reads the protocol's start-up flags
// (docs/worker-protocol.md) into a worker.Config and runs worker.Run.
package workercmd

import (
	"context"
	"flag"
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

// Exit codes of the built-in worker: 1 it stopped on an error after its
// hello, 255 bad input (the problem on the first line of stderr; nothing
// connected).
const (
	ExitFailed  = 1
	ExitBadArgs = 255
)

// Main is the built-in worker's main function: Command with the
// process's command line, input and outputs, then exit with its code.
func Main() {
	// SIGINT or SIGTERM ends the serving loop as the end of stdin does:
	// the session is closed and the grants it ended are reported. The
	// controller ends a worker by closing its stdin; a signal is for a
	// worker run by hand.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := Command(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command is the built-in worker with its command line, input and
// outputs given, so tests drive it without a process; it returns the
// exit code.
func Command(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
			return ExitBadArgs
		}
		defer stop()
	}
	log.Info("credentials from the environment", "zk_auth", cfg.ZKAuth, "register_secret", cfg.RegisterSecret != "")
	cfg.Logger = log
	if err := worker.Run(ctx, cfg, stdin, stdout); err != nil {
		log.Error("worker stopped", "err", err)
		return ExitFailed
	}
	return 0
}

// ServiceAsked is the --service of a worker's command line, or "" when
// the line does not parse (Command then says what is wrong with it).
// chaos-worker reads it to hand another service's worker over to the
// binary that links that service's recipes.
func ServiceAsked(args []string) string {
	fs := flag.NewFlagSet("chaos-worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := defineFlags(fs)
	if fs.Parse(args) != nil {
		return ""
	}
	return f.service
}
