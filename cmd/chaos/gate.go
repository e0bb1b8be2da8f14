package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/run/matrix"
	"github.com/zkchaos/zkchaos/workloads"
)

// newGateCmd is `chaos gate`: test-all with another cell list: the
// standard cells of a correct client of --workload (matrix.GateOf), or a team's own
// (--matrix), against one subject, usually a team's own client
// (exec:CMD). Exit codes as test-all's, so a CI job gates on them.
func newGateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "gate --recipe exec:CMD [flags]",
		Short:   "run the standard cells of a correct lock, election or config client (or --matrix FILE) against one subject, for CI",
		Long:    "Run the standard cells of a correct client of --workload (lock by default), or the cells of --matrix FILE, against one subject,\nusually a team's own client (exec:CMD, docs/worker-protocol.md).\n\n" + matrixExitHelp,
		GroupID: groupMatrix,
	}
	fs := c.Flags()
	recipe := fs.String("recipe", "", "the subject to gate, usually exec:PATH [ARGS] (docs/worker-protocol.md); any --recipe of chaos run")
	file := fs.String("matrix", "", "cells and expected verdicts from this JSON (or .yaml/.yml) file instead of the standard ones")
	quick := fs.Bool("quick", false, "the smallest standard set: the no-fault baseline fenced valid, and one cell that proves the harness sees the client's effects (a PR job)")
	workload := fs.String("workload", "", "the standard cells of a correct client of this workload: "+strings.Join(workloads.Names(), ", ")+" (default lock)")
	m := matrixRun{cmd: "gate", repeat: 1, passRate: 1}
	fs.BoolVar(&m.shrink, "shrink", false, "after the cells, shrink the first cell judged wrong that expected the subject valid (chaos shrink, within --shrink-budget) and print the minimal command; off by default, as it costs minutes")
	fs.DurationVar(&m.shrinkBudget, "shrink-budget", defaultShrinkBudget, "with --shrink: how long the shrink searches")
	fs.DurationVar(&m.baseline, "baseline", matrix.DefaultBaseline, "before the cells, run the subject this long without a fault; when it completes nothing, or fails every operation of a kind, stop with exit 2 and say why (its errors, its stderr, what the protocol requires; 0: no baseline)")
	list := defineMatrixFlags(fs, &m, "results folder (runs go under <results>/gate/<timestamp>/)",
		"seed of each cell's run", "override the --time-limit of every cell that runs its time (0: the cell's own, 30s); a cell that expects only violations runs until its first, up to --violation-limit")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args, " ")))
		}
		sel, mode, err := gateCells(*recipe, *file, *workload, *quick, m.prog)
		if err == nil {
			err = m.check()
		}
		if err == nil && m.baseline < 0 {
			err = fmt.Errorf("--baseline must not be negative")
		}
		if err == nil && m.shrinkBudget <= 0 {
			err = fmt.Errorf("--shrink-budget %s: must be positive", m.shrinkBudget)
		}
		if err != nil {
			fmt.Fprintf(c.ErrOrStderr(), "chaos gate: %v\n", err)
			return status(exitHarness)
		}
		m.mode = mode
		return status(list.runOrList(c, withLimits(sel, m), m))
	}
	return c
}

// gateCells checks the flags and builds the cells: every subject named,
// by --recipe or in the file, must resolve (a missing executable is bad
// input, found before anything starts).
func gateCells(recipe, file, workload string, quick bool, prog string) ([]matrix.Cell, progress.Mode, error) {
	mode, err := progress.ParseMode(prog)
	if err != nil {
		return nil, "", err
	}
	if recipe == "" && file == "" {
		return nil, "", fmt.Errorf("--recipe is required (the subject to gate, e.g. exec:./my-lock-client)")
	}
	if file != "" && quick {
		return nil, "", fmt.Errorf("--quick picks among the standard cells; it does not apply to --matrix")
	}
	if recipe != "" {
		if err := subjects.Validate(recipe); err != nil {
			return nil, "", fmt.Errorf("--recipe: %w", err)
		}
	}
	var sel []matrix.Cell
	switch {
	case workload != "" && file != "":
		err = fmt.Errorf("--workload picks the standard cells; a --matrix cell names its own workload")
	case file != "":
		sel, err = matrix.LoadFile(file, recipe, nemesis.ValidateList)
	default:
		sel, err = matrix.GateOf(workload, recipe)
	}
	if quick {
		sel = matrix.Smoke(sel)
	}
	if err != nil {
		return nil, "", err
	}
	for _, c := range sel {
		if err := subjects.Validate(c.Recipe); err != nil {
			return nil, "", fmt.Errorf("cell %s: recipe: %w", c.Name(), err)
		}
	}
	return sel, mode, nil
}
