package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/report/serve"
)

// cmdServe is `chaos serve` with args and the given outputs.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, context.Background(), append([]string{"serve"}, args...), streams{out: stdout, err: stderr})
}

// newServeCmd is `chaos serve`: the results folder over HTTP until
// SIGINT/SIGTERM. Bad input (the folder, the address, a non-loopback
// address without --allow-remote) exits 255 before anything listens; an
// address in use is the same exit with its own message.
func newServeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "serve [--results DIR] [--addr 127.0.0.1:8080] [--allow-remote]",
		Short:   "browse the results folder (loopback only by default)",
		GroupID: groupInspect,
	}
	results := c.Flags().String("results", "results", "the results folder to serve")
	addr := c.Flags().String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	remote := c.Flags().Bool("allow-remote", false, "allow an --addr that is not on loopback (the results become readable from other machines)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args, " ")))
		}
		return status(serveResults(c, *results, *addr, *remote))
	}
	return c
}

func serveResults(c *cobra.Command, results, addr string, remote bool) int {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "chaos serve: %v\n", err)
		return exitHarness
	}
	if err := serve.CheckAddr(addr, remote); err != nil {
		return fail(err)
	}
	srv, err := serve.Open(results, !remote, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	err = srv.Run(c.Context(), addr, func(a net.Addr) {
		fmt.Fprintf(stdout, "serving %s at http://%s/ (Ctrl-C stops)\n", results, a)
	})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, "chaos serve: stopped")
	return 0
}
