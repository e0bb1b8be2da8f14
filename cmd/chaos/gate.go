package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/run/matrix"
	"github.com/zkchaos/zkchaos/workloads"
)

// cmdGate is test-all with another cell list: the standard cells of a
// correct client of --workload (matrix.GateOf), or a team's own (--matrix), against one
// subject, usually a team's own client (exec:CMD). Exit codes as
// test-all's, so a CI job gates on them.
func cmdGate(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("chaos gate", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	recipe := fs.String("recipe", "", "the subject to gate, usually exec:PATH [ARGS] (docs/worker-protocol.md); any --recipe of chaos run")
	file := fs.String("matrix", "", "cells and expected verdicts from this JSON (or .yaml/.yml) file instead of the standard ones")
	quick := fs.Bool("quick", false, "the smallest standard set: no fault fenced valid, and one cell that proves the harness sees the client (a PR job)")
	workload := fs.String("workload", "", "the standard cells of this workload's client: "+strings.Join(workloads.Names(), ", ")+" (default lock)")
	results := fs.String("results", "results", "results folder (runs go under <results>/gate/<timestamp>/)")
	junit := fs.String("junit", "", "write JUnit XML (one test case per cell) to this file")
	list := fs.Bool("list", false, "list the cells and exit")
	seed := fs.Int64("seed", 1, "seed of each cell's run")
	limit := fs.Duration("time-limit", 0, "override every cell's --time-limit (0: the cell's own, 30s)")
	prog := fs.String("progress", string(progress.Auto), "the current cell's "+progressUsage)
	parallel := fs.Int("parallel", 1, parallelUsage)
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		return parseExit(usageError(fs, os.Stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	sel, mode, err := gateCells(*recipe, *file, *workload, *quick, *prog)
	if err == nil && *limit < 0 {
		err = fmt.Errorf("--time-limit must not be negative")
	}
	if err == nil {
		err = checkParallel(*parallel)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos gate: %v\n", err)
		return exitHarness
	}
	sel = withTimeLimit(sel, *limit)
	if *list {
		listCells(sel)
		return 0
	}
	return runMatrix(ctx, sel, matrixRun{cmd: "gate", results: *results, repeat: 1, passRate: 1,
		seed: *seed, junit: *junit, mode: mode, parallel: *parallel})
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
