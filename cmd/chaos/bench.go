package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/run/bench"
)

// cmdBench is `chaos bench`: flags only; package bench measures.
func cmdBench(ctx, hard context.Context, args []string) int {
	cfg, strict, err := parseBenchFlags(args, os.Stderr)
	if err != nil {
		return parseExit(err)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos bench: find own executable: %v\n", err)
		return exitHarness
	}
	res, dir, err := bench.Run(ctx, hard, cfg, exe, os.Stderr)
	if res != nil && len(res.Figures) > 0 {
		res.Print(os.Stdout)
	}
	if dir != "" {
		fmt.Fprintf(os.Stdout, "bench folder: %s (%s)\n", dir, bench.File)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos bench: %v\n", err)
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

// parseBenchFlags checks every flag before anything starts; a mistake is
// reported on the first line and returns errUsage (exit 255).
func parseBenchFlags(args []string, stderr io.Writer) (bench.Config, bool, error) {
	cfg := bench.Defaults()
	fs := flag.NewFlagSet("chaos bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients (sessions, worker processes) of every figure")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "ZooKeeper servers in the ensemble")
	fs.StringVar(&cfg.Cluster, "cluster", cfg.Cluster, "where the ensemble runs: local or docker (needs --net netns)")
	fs.StringVar(&cfg.Net, "net", cfg.Net, "auto (namespaces when root), netns or loopback")
	subs := fs.String("subjects", strings.Join(cfg.Subjects, ","), "comma-separated lock subjects to measure (any --recipe of chaos run: "+strings.Join(subjects.Names(), ", ")+")")
	quick := fs.Bool("quick", false, "CI: "+bench.QuickWarmup.String()+" warm-up and "+bench.QuickWindow.String()+" window per figure")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "time before each figure's window (overridden by --quick)")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "time each figure counts (overridden by --quick)")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "ZooKeeper session timeout of every client")
	fs.DurationVar(&cfg.TickTime, "tick", cfg.TickTime, "ZooKeeper tickTime")
	fs.StringVar(&cfg.ResultsDir, "results", cfg.ResultsDir, "results folder (the bench goes under <results>/<name>/<timestamp>/)")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "folder under --results")
	fs.BoolVar(&cfg.Profile, "profile", false, "write the controller's CPU profile ("+bench.ProfileFile+") into the bench folder")
	strict := fs.Bool("strict", false, "exit 1 when a target is not met (default: the verdicts are shown, exit 0)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return cfg, false, err
	}
	if fs.NArg() > 0 {
		return cfg, false, usageError(fs, stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	cfg.Subjects = splitList(*subs)
	if cfg.Quick = *quick; cfg.Quick {
		cfg.Warmup, cfg.Window = bench.QuickWarmup, bench.QuickWindow
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, usageError(fs, stderr, "%v", err)
	}
	return cfg, *strict, nil
}
