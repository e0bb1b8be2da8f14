package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/run/janitor"
)

// newCleanupCmd is `chaos cleanup`: it removes what earlier runs left
// behind: the processes, Docker containers, network slots and Docker
// networks of runs whose controller and janitor are both gone (what every
// run's start sweeps too). A run in progress, or one its janitor is still
// sweeping, is left alone unless --all.
func newCleanupCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "cleanup [--all]",
		Short:   "remove processes, namespaces and rules left by earlier runs",
		GroupID: groupMaint,
	}
	all := c.Flags().Bool("all", false, "also remove runs whose controller or janitor is still alive")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args, " ")))
		}
		return status(cleanup(c, *all))
	}
	return c
}

func cleanup(c *cobra.Command, all bool) int {
	rep, err := janitor.Cleanup(c.Context(), all)
	for _, line := range rep {
		fmt.Fprintln(c.OutOrStdout(), line)
	}
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "chaos cleanup: %v\n", err)
		return exitHarness
	}
	if len(rep) == 0 {
		fmt.Fprintln(c.OutOrStdout(), "nothing to clean up")
	}
	return 0
}

// newJanitorCmd is `chaos janitor`, the dead-man switch chaos run starts:
// it sweeps the run's processes and network when its stdin closes.
func newJanitorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "janitor --run ID [--log FILE]",
		Short:  "the dead-man switch (started by chaos run)",
		Hidden: true,
	}
	run := c.Flags().String("run", "", "run id whose processes and network to sweep when stdin closes")
	logPath := c.Flags().String("log", "", "log file")
	c.RunE = func(c *cobra.Command, _ []string) error {
		if *run == "" {
			return status(mistake(c, "--run is required (the janitor is started by chaos run)"))
		}
		return status(janitor.Main(*run, *logPath))
	}
	return c
}
