package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
)

// cmdImage is `chaos image build`: the docker backend's ZooKeeper image,
// built offline from Debian packages and skipped when its tag exists.
func cmdImage(ctx context.Context, args []string) int {
	return runImage(ctx, args, os.Stdout, os.Stderr)
}

func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const usage = "usage: chaos image build [--force] [--quiet]"
	if len(args) == 0 || args[0] != "build" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "chaos image: want the subcommand build, got %q\n%s\n", args, usage)
		return exitHarness
	}
	fs := flag.NewFlagSet("chaos image build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "rebuild even when the tag exists")
	quiet := fs.Bool("quiet", false, "do not show mmdebstrap's progress")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitHarness
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "chaos image build: unexpected arguments %q\n%s\n", fs.Args(), usage)
		return exitHarness
	}
	cli, err := engine.Connect(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "chaos image build: %v\n", err)
		return exitHarness
	}
	defer cli.Close()
	opts := image.Options{Force: *force, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if !*quiet {
		opts.Output = stderr
	}
	res, err := image.Build(ctx, cli, opts)
	if err != nil {
		fmt.Fprintf(stderr, "chaos image build: %v\n", err)
		return exitHarness
	}
	mb := float64(res.Size) / 1e6
	if !res.Built {
		fmt.Fprintf(stdout, "%s exists (%.0f MB, %s); --force rebuilds it\n", res.Tag, mb, short(res.ID))
		return 0
	}
	fmt.Fprintf(stdout, "%s built in %s, %.0f MB (%s)\n", res.Tag, res.Took.Round(100*time.Millisecond), mb, short(res.ID))
	return 0
}

func short(id string) string {
	if len(id) > 19 {
		return id[:19] // sha256: and 12 hex digits, as docker images shows
	}
	return id
}
