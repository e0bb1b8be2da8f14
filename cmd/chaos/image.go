package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
)

// runImage is `chaos image` with args and the given outputs.
func runImage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, context.Background(), append([]string{"image"}, args...), streams{out: stdout, err: stderr})
}

// newImageCmd is `chaos image`, whose one subcommand is build.
func newImageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "image build [--force] [--quiet]",
		Short:   "build the docker backend's ZooKeeper image, offline",
		GroupID: groupMaint,
		// Without build: a mistake, named on the first line.
		RunE: func(c *cobra.Command, args []string) error {
			return status(mistake(c, "want the subcommand build, got %q", args))
		},
	}
	c.AddCommand(newImageBuildCmd())
	return c
}

// newImageBuildCmd is `chaos image build`: the docker backend's ZooKeeper
// image, built offline from Debian packages and skipped when its tag
// exists.
func newImageBuildCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "build [--force] [--quiet]",
		Short: "build the docker backend's ZooKeeper image offline (skipped when its tag exists)",
	}
	force := c.Flags().Bool("force", false, "rebuild even when the tag exists")
	quiet := c.Flags().Bool("quiet", false, "do not show mmdebstrap's progress")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return status(mistake(c, "unexpected arguments %q", args))
		}
		return status(buildImage(c, *force, *quiet))
	}
	return c
}

func buildImage(c *cobra.Command, force, quiet bool) int {
	ctx, stdout, stderr := c.Context(), c.OutOrStdout(), c.ErrOrStderr()
	cli, err := engine.Connect(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "chaos image build: %v\n", err)
		return exitHarness
	}
	defer cli.Close()
	opts := image.Options{Force: force, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if !quiet {
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
