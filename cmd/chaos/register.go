package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/zkchaos/zkchaos/resource/register"
)

// cmdRegister runs the fenced register until ctx is cancelled. Its only
// stdout output is one JSON line with the bound address, because the
// controller starts it with --listen port 0 and must learn the real port.
func cmdRegister(ctx context.Context, args []string) int {
	return runRegister(ctx, args, os.Stdout, os.Stderr)
}

func runRegister(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos register", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	logPath := fs.String("log", "", "apply log file (required; an existing one is replayed and continued)")
	mode := fs.String("fencing", register.ModeOn, "fencing mode: off, on or strict (tasks: on and strict both fence by term)")
	idem := fs.String("idempotency", register.IdempotencyOn, "task table: on refuses to run a SUCCEEDED task again, off lets it run again")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: chaos register --log PATH [--listen ADDR] [--fencing off|on|strict] [--idempotency on|off]")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return parseExit(err)
	}
	bad := func(msg string) int {
		fmt.Fprintf(stderr, "chaos register: %s\n", msg)
		fs.Usage()
		return 255
	}
	if fs.NArg() > 0 {
		return bad(fmt.Sprintf("unexpected arguments: %q", fs.Args()))
	}
	if *logPath == "" {
		return bad("--log is required")
	}
	switch *mode {
	case register.ModeOff, register.ModeOn, register.ModeStrict:
	default:
		return bad(fmt.Sprintf("--fencing %q: want off, on or strict", *mode))
	}
	switch *idem {
	case register.IdempotencyOn, register.IdempotencyOff:
	default:
		return bad(fmt.Sprintf("--idempotency %q: want on or off", *idem))
	}
	// The secret comes from the environment only (never a flag: ps shows
	// command lines to everyone); a register without one would answer
	// anyone who reaches its address.
	secret := os.Getenv(register.SecretEnv)
	if secret == "" {
		return bad(register.SecretEnv + " is not set: the register answers only calls that present the run's secret")
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "register")
	var announceErr error
	err := register.Serve(ctx, register.Config{
		Listen:      *listen,
		LogPath:     *logPath,
		Mode:        *mode,
		Idempotency: *idem,
		Secret:      secret,
		Logger:      logger,
	}, func(addr string) {
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
