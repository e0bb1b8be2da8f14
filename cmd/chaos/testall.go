package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/run/matrix"
)

// cmdTestAll runs the matrix of cells; exit codes as Jepsen's test-all:
// 0 every cell as expected, 1 a cell judged wrong, 2 a cell unknown, 255
// the harness failed.
func cmdTestAll(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("chaos test-all", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	results := fs.String("results", "results", "results folder (runs go under <results>/test-all/<timestamp>/)")
	repeat := fs.Int("repeat", 1, "run each cell N times; reports detection rates and median time to first violation")
	passRate := fs.Float64("pass-rate", 1, "share of a cell's attempts that must come out as expected (0 < r <= 1)")
	cells := fs.String("cells", "", "comma-separated cell filters (globs or substrings of recipe/nemesis/fencing-X; !PATTERN leaves cells out)")
	smoke := fs.Bool("smoke", false, "only the cells marked for CI")
	junit := fs.String("junit", "", "write JUnit XML (one test case per cell) to this file")
	list := fs.Bool("list", false, "list the cells and exit")
	seed := fs.Int64("seed", 1, "seed of the first attempt (attempt i uses seed+i)")
	limit := fs.Duration("time-limit", 0, "override every cell's --time-limit (0: the cell's own)")
	prog := fs.String("progress", string(progress.Auto), "the current cell's "+progressUsage)
	parallel := fs.Int("parallel", 1, parallelUsage)
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		return parseExit(usageError(fs, os.Stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	if err := checkParallel(*parallel); err != nil {
		fmt.Fprintf(os.Stderr, "chaos test-all: %v\n", err)
		return exitHarness
	}
	mode, err := progress.ParseMode(*prog)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos test-all: %v\n", err)
		return exitHarness
	}
	if *repeat < 1 || *passRate <= 0 || *passRate > 1 {
		fmt.Fprintln(os.Stderr, "chaos test-all: --repeat must be >= 1 and --pass-rate in (0, 1]")
		return exitHarness
	}
	exe0, _ := os.Executable()
	all := matrix.Default(exe0)
	if *smoke {
		all = matrix.Smoke(all)
	}
	sel, err := matrix.Filter(all, splitList(*cells))
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos test-all: %v\n", err)
		return exitHarness
	}
	if *limit < 0 {
		fmt.Fprintln(os.Stderr, "chaos test-all: --time-limit must not be negative")
		return exitHarness
	}
	sel = withTimeLimit(sel, *limit)
	if *list {
		listCells(sel)
		return 0
	}
	return runMatrix(ctx, sel, matrixRun{cmd: "test-all", results: *results, repeat: *repeat,
		passRate: *passRate, seed: *seed, junit: *junit, mode: mode, parallel: *parallel})
}

const parallelUsage = "cells run side by side, each in its own network slot and folder (rows still in cell order); 1 runs one at a time, each cell owning the machine (docs/architecture.md, \"Speed of the gate\")"

// maxParallel bounds --parallel by the slots a machine has for local
// runs (netns slots 0..55): more would wait for a slot or fail to claim
// one.
const maxParallel = 56

func checkParallel(n int) error {
	if n < 1 || n > maxParallel {
		return fmt.Errorf("--parallel %d: must be 1..%d", n, maxParallel)
	}
	return nil
}

// withTimeLimit overrides every cell's --time-limit (0: keep the cell's).
func withTimeLimit(sel []matrix.Cell, limit time.Duration) []matrix.Cell {
	if limit > 0 {
		for i := range sel {
			sel[i].Args = append(slices.Clone(sel[i].Args), "--time-limit", limit.String())
		}
	}
	return sel
}

func listCells(sel []matrix.Cell) {
	for _, c := range sel {
		fmt.Printf("%-48s expect %-30s %s\n", c.Name(), c.ExpectString(), c.Why)
	}
}

// matrixRun is how test-all and gate run their cells: one runner, two
// cell lists.
type matrixRun struct {
	cmd      string // "test-all" or "gate": messages, the results subfolder, the JSON's name
	results  string
	repeat   int
	passRate float64
	seed     int64
	junit    string
	mode     progress.Mode
	parallel int
}

// runMatrix runs the cells and writes the table, <cmd>.json, index.html
// and the JUnit file; its exit code is test-all's.
func runMatrix(ctx context.Context, sel []matrix.Cell, r matrixRun) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos %s: find own executable: %v\n", r.cmd, err)
		return exitHarness
	}
	dir := filepath.Join(r.results, r.cmd, time.Now().UTC().Format("20060102T150405Z"))
	var cell *progress.Latest
	if r.mode != progress.Off {
		cell = &progress.Latest{}
	}
	shown := progress.Start(r.mode, os.Stderr, cell.Get)
	rs, runErr := matrix.Run(ctx, sel, matrix.Options{Exe: exe, Results: dir, Repeat: r.repeat,
		PassRate: r.passRate, Seed: r.seed, Out: shown.Bypass(os.Stdout), Skip: matrix.Missing(ctx), Progress: cell, Parallel: r.parallel})
	shown.Stop()
	code := matrix.Summary(os.Stdout, rs)
	writes := []func() error{
		func() error { return matrix.WriteJSON(filepath.Join(dir, r.cmd+".json"), rs) },
		func() error { return matrix.WriteIndex(filepath.Join(dir, "index.html"), r.cmd, rs) },
	}
	if r.junit != "" {
		writes = append(writes, func() error { return matrix.WriteJUnit(r.junit, r.cmd, rs) })
	}
	for _, w := range writes {
		if err := w(); err != nil {
			fmt.Fprintf(os.Stderr, "chaos %s: %v\n", r.cmd, err)
			code = exitHarness
		}
	}
	fmt.Printf("runs: %s (index: %s)\n", dir, filepath.Join(dir, "index.html"))
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "chaos %s: stopped: %v\n", r.cmd, runErr)
		if code == 0 {
			code = exitUnknown
		}
	}
	return code
}
