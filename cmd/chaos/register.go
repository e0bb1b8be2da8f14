package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/resource/register"
)

// runRegister is `chaos register` with args and the given outputs.
func runRegister(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, context.Background(), append([]string{"register"}, args...), streams{out: stdout, err: stderr})
}

// newRegisterCmd is `chaos register`: the fenced register, until ctx is
// cancelled. Its only stdout output is one JSON line with the bound
// address, because the controller starts it with --listen port 0 and
// must learn the real port.
func newRegisterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "register --log PATH [--listen ADDR] [--fencing off|on|strict] [--idempotency on|off]",
		Short:  "the fenced register process (started by chaos run)",
		Hidden: true,
	}
	cfg := register.Config{}
	fs := c.Flags()
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	fs.StringVar(&cfg.LogPath, "log", "", "apply log file (required; an existing one is replayed and continued)")
	fs.StringVar(&cfg.Mode, "fencing", register.ModeOn, "fencing mode: off, on or strict (tasks: on and strict both fence by term)")
	fs.StringVar(&cfg.Idempotency, "idempotency", register.IdempotencyOn, "task table: on refuses to run a SUCCEEDED task again, off lets it run again")
	c.RunE = func(c *cobra.Command, args []string) error {
		if msg := registerMistake(cfg, args); msg != "" {
			return status(mistake(c, "%s", msg))
		}
		// The secret comes from the environment only (never a flag: ps
		// shows command lines to everyone); a register without one would
		// answer anyone who reaches its address.
		cfg.Secret = os.Getenv(register.SecretEnv)
		if cfg.Secret == "" {
			return status(mistake(c, "%s is not set: the register answers only calls that present the run's secret", register.SecretEnv))
		}
		return status(serveRegister(c.Context(), cfg, c.OutOrStdout(), c.ErrOrStderr()))
	}
	return c
}

// registerMistake says what is wrong with the register's flags ("" for
// nothing).
func registerMistake(cfg register.Config, args []string) string {
	if len(args) > 0 {
		return fmt.Sprintf("unexpected arguments: %q", args)
	}
	if cfg.LogPath == "" {
		return "--log is required"
	}
	switch cfg.Mode {
	case register.ModeOff, register.ModeOn, register.ModeStrict:
	default:
		return fmt.Sprintf("--fencing %q: want off, on or strict", cfg.Mode)
	}
	switch cfg.Idempotency {
	case register.IdempotencyOn, register.IdempotencyOff:
	default:
		return fmt.Sprintf("--idempotency %q: want on or off", cfg.Idempotency)
	}
	return ""
}

// serveRegister serves until ctx is cancelled, announcing its address on
// stdout, and returns the exit code.
func serveRegister(ctx context.Context, cfg register.Config, stdout, stderr io.Writer) int {
	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "register")
	var announceErr error
	cfg.Logger = logger
	err := register.Serve(ctx, cfg, func(addr string) {
		line, err := json.Marshal(struct {
			Listen string `json:"listen"`
		}{addr})
		if err == nil {
			_, err = fmt.Fprintf(stdout, "%s\n", line)
		}
		announceErr = err
	})
	if announceErr != nil {
		// The controller cannot find a register that did not announce
		// itself; it will time out waiting, so say why here.
		logger.Error("cannot announce listen address", "err", announceErr)
	}
	if err != nil {
		logger.Error("register failed", "err", err)
		return 1
	}
	return 0
}
