package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/zkchaos/zkchaos/run/janitor"
)

// cmdCleanup removes what earlier runs left behind: processes tagged with
// a run whose controller is dead, their Docker containers, network slots
// and Docker networks. A run in progress is left alone unless --all.
func cmdCleanup(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("chaos cleanup", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	all := fs.Bool("all", false, "also remove runs whose controller is still alive")
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		return parseExit(usageError(fs, os.Stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	rep, err := janitor.Cleanup(ctx, *all)
	for _, line := range rep {
		fmt.Println(line)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos cleanup: %v\n", err)
		return exitHarness
	}
	if len(rep) == 0 {
		fmt.Println("nothing to clean up")
	}
	return 0
}

func cmdJanitor(_ context.Context, args []string) int {
	fs := flag.NewFlagSet("chaos janitor", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	run := fs.String("run", "", "run id whose processes and network to sweep when stdin closes")
	logPath := fs.String("log", "", "log file")
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return parseExit(err)
	}
	if *run == "" {
		return parseExit(usageError(fs, os.Stderr, "--run is required (the janitor is started by chaos run)"))
	}
	return janitor.Main(*run, *logPath)
}
