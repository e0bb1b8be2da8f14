package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/zkchaos/zkchaos/report/serve"
)

// cmdServe serves the results folder until SIGINT/SIGTERM (ctx). Bad
// input (the folder, the address, a non-loopback address without
// --allow-remote) exits 255 before anything listens; an address in use
// is the same exit with its own message.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: chaos serve [--results DIR] [--addr 127.0.0.1:8080] [--allow-remote]")
		fs.PrintDefaults()
	}
	results := fs.String("results", "results", "the results folder to serve")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	remote := fs.Bool("allow-remote", false, "allow an --addr that is not on loopback (the results become readable from other machines)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		return parseExit(usageError(fs, stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	if err := serve.CheckAddr(*addr, *remote); err != nil {
		fmt.Fprintf(stderr, "chaos serve: %v\n", err)
		return exitHarness
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := serve.Open(*results, !*remote, log)
	if err != nil {
		fmt.Fprintf(stderr, "chaos serve: %v\n", err)
		return exitHarness
	}
	defer srv.Close()
	err = srv.Run(ctx, *addr, func(a net.Addr) {
		fmt.Fprintf(stdout, "serving %s at http://%s/ (Ctrl-C stops)\n", *results, a)
	})
	if err != nil {
		fmt.Fprintf(stderr, "chaos serve: %v\n", err)
		return exitHarness
	}
	fmt.Fprintln(stdout, "chaos serve: stopped")
	return 0
}
