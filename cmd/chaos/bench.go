package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/run/bench"
)

// newBenchCmd is `chaos bench`: flags only; package bench measures.
func newBenchCmd(hard context.Context) *cobra.Command {
	c := &cobra.Command{
		Use:     "bench [flags]",
		Short:   "throughput of the lock subjects against raw ZooKeeper create+delete pairs (--quick for CI)",
		GroupID: groupMaint,
	}
	f := defineBenchFlags(c.Flags())
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args, " ")))
		}
		cfg, err := f.settle()
		if err != nil {
			return status(mistake(c, "%v", err))
		}
		return status(runBench(c, hard, cfg, f.strict))
	}
	return c
}

// runBench measures and returns the exit code: 1 when --strict and a
// known target is missed.
func runBench(c *cobra.Command, hard context.Context, cfg bench.Config, strict bool) int {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "chaos bench: find own executable: %v\n", err)
		return exitHarness
	}
	res, dir, err := bench.Run(c.Context(), hard, cfg, exe, stderr)
	if res != nil && len(res.Figures) > 0 {
		res.Print(stdout)
	}
	if dir != "" {
		fmt.Fprintf(stdout, "bench folder: %s (%s)\n", dir, bench.File)
	}
	if err != nil {
		fmt.Fprintf(stderr, "chaos bench: %v\n", err)
		return exitHarness
	}
	if strict {
		for _, t := range res.Targets {
			if t.Known && !t.Met {
				return exitInvalid
			}
		}
	}
	return 0
}

// benchFlags are chaos bench's flags as parsed.
type benchFlags struct {
	cfg           bench.Config
	subs          string
	quick, strict bool
}

func defineBenchFlags(fs *pflag.FlagSet) *benchFlags {
	f := &benchFlags{cfg: bench.Defaults()}
	cfg := &f.cfg
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients (sessions, worker processes) of every figure")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "ZooKeeper servers in the ensemble")
	fs.StringVar(&cfg.Cluster, "cluster", cfg.Cluster, "where the ensemble runs: local or docker (needs --net netns)")
	fs.StringVar(&cfg.Net, "net", cfg.Net, "auto (namespaces when root), netns or loopback")
	fs.StringVar(&f.subs, "subjects", strings.Join(cfg.Subjects, ","), "comma-separated lock subjects to measure (any --recipe of chaos run: "+strings.Join(subjects.Names(), ", ")+")")
	fs.BoolVar(&f.quick, "quick", false, "CI: "+bench.QuickWarmup.String()+" warm-up and "+bench.QuickWindow.String()+" window per figure")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "time before each figure's window (overridden by --quick)")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "time each figure counts, longer (up to ten times) while it has counted no operation, so that a loaded machine slows a figure instead of zeroing it (overridden by --quick)")
	fs.IntVar(&cfg.HelloStarts, "hello-starts", cfg.HelloStarts, "times the built-in worker is started each way for its exec-to-hello figure (the target is set for the default)")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "ZooKeeper session timeout of every client")
	fs.DurationVar(&cfg.TickTime, "tick", cfg.TickTime, "ZooKeeper tickTime")
	fs.StringVar(&cfg.ResultsDir, "results", cfg.ResultsDir, "results folder (the bench goes under <results>/<name>/<timestamp>/)")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "folder under --results")
	fs.BoolVar(&cfg.Profile, "profile", false, "write the controller's CPU profile ("+bench.ProfileFile+") into the bench folder")
	fs.BoolVar(&f.strict, "strict", false, "exit 1 when a target is not met (default: the verdicts are shown, exit 0)")
	return f
}

// settle checks every flag before anything starts.
func (f *benchFlags) settle() (bench.Config, error) {
	cfg := f.cfg
	cfg.Subjects = splitList(f.subs)
	if cfg.Quick = f.quick; cfg.Quick {
		cfg.Warmup, cfg.Window = bench.QuickWarmup, bench.QuickWindow
	}
	return cfg, cfg.Validate()
}
