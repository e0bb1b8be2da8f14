package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/run/matrix"
	"github.com/zkchaos/zkchaos/run/shrink"
)

// newTestAllCmd is `chaos test-all`: the matrix of cells; exit codes as
// Jepsen's test-all: 0 every cell as expected, 1 a cell judged wrong, 2 a
// cell unknown, 255 the harness failed.
func newTestAllCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "test-all [flags]",
		Short:   "run the matrix of recipes x faults x fencing against expected verdicts",
		Long:    "Run the matrix of recipes x faults x fencing and compare each cell with its expected verdict.\n\n" + matrixExitHelp,
		GroupID: groupMatrix,
	}
	fs := c.Flags()
	m := matrixRun{cmd: "test-all"}
	fs.IntVar(&m.repeat, "repeat", 1, "run each cell N times; reports detection rates and median time to first violation")
	fs.Float64Var(&m.passRate, "pass-rate", 1, "share of a cell's attempts that must come out as expected (0 < r <= 1)")
	cells := fs.String("cells", "", "comma-separated cell filters (globs or substrings of recipe/nemesis/fencing-X; !PATTERN leaves cells out)")
	smoke := fs.Bool("smoke", false, "only the cells marked for CI")
	list := defineMatrixFlags(fs, &m, "results folder (runs go under <results>/test-all/<timestamp>/)",
		"seed of the first attempt (attempt i uses seed+i)", "override the --time-limit of every cell that runs its time (0: the cell's own); a cell that expects only violations runs until its first, up to --violation-limit")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args, " ")))
		}
		sel, err := testAllCells(&m, *cells, *smoke)
		if err != nil {
			fmt.Fprintf(c.ErrOrStderr(), "chaos test-all: %v\n", err)
			return status(exitHarness)
		}
		return status(list.runOrList(c, withLimits(sel, m), m))
	}
	return c
}

// testAllCells checks test-all's flags and picks its cells.
func testAllCells(m *matrixRun, cells string, smoke bool) ([]matrix.Cell, error) {
	if err := checkParallel(m.parallel); err != nil {
		return nil, err
	}
	mode, err := progress.ParseMode(m.prog)
	if err != nil {
		return nil, err
	}
	m.mode = mode
	if m.repeat < 1 || m.passRate <= 0 || m.passRate > 1 {
		return nil, errors.New("--repeat must be >= 1 and --pass-rate in (0, 1]")
	}
	exe, _ := os.Executable()
	all := matrix.Default(exe)
	if smoke {
		all = matrix.Smoke(all)
	}
	sel, err := matrix.Filter(all, splitList(cells))
	if err != nil {
		return nil, err
	}
	return sel, m.check()
}

const matrixExitHelp = "Exit codes: 0 every cell as expected, 1 a cell judged wrong, 2 a cell unknown, 255 the harness\nfailed or the input was bad."

// listFlag is --list of test-all and gate: list the cells instead of
// running them.
type listFlag struct{ list *bool }

// defineMatrixFlags adds the flags test-all and gate share, with the
// usage that differs between them.
func defineMatrixFlags(fs *pflag.FlagSet, m *matrixRun, resultsUsage, seedUsage, limitUsage string) listFlag {
	fs.StringVar(&m.results, "results", "results", resultsUsage)
	fs.StringVar(&m.junit, "junit", "", "write JUnit XML (one test case per cell) to this file")
	list := fs.Bool("list", false, "list the cells and exit")
	fs.Int64Var(&m.seed, "seed", 1, seedUsage)
	fs.DurationVar(&m.limit, "time-limit", 0, limitUsage)
	fs.DurationVar(&m.stopLimit, "violation-limit", 0, fmt.Sprintf("the most a cell that expects only violations runs: it stops at its first one, and fails when it found none in this time (0: the cell's own, %s unless it names one; the table shows each first violation and the limit)", matrix.DefaultLimit))
	fs.StringVar(&m.prog, "progress", string(progress.Auto), "the current cell's "+progressUsage)
	fs.IntVar(&m.parallel, "parallel", 1, parallelUsage)
	fs.BoolVar(&m.failFast, "fail-fast", false, "start no more cells once one is judged wrong, unknown or in error (what runs finishes); the cells not started are reported as skipped, saying why")
	return listFlag{list}
}

// runOrList lists the cells (--list) or runs them.
func (l listFlag) runOrList(c *cobra.Command, sel []matrix.Cell, m matrixRun) int {
	if *l.list {
		listCells(c.OutOrStdout(), sel)
		return 0
	}
	return runMatrix(c, sel, m)
}

// check refuses the shared flags' values that make no sense.
func (m *matrixRun) check() error {
	if m.limit < 0 {
		return errors.New("--time-limit must not be negative")
	}
	if m.stopLimit < 0 {
		return errors.New("--violation-limit must not be negative")
	}
	return checkParallel(m.parallel)
}

const parallelUsage = "cells run side by side, each in its own network slot and folder (rows still in cell order); 1 runs one at a time, each cell owning the machine (docs/measurements.md, \"Speed of the gate\")"

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

// withLimits sets the cells' limits from --time-limit (every cell's
// time; a cell that stops at its first violation ignores it) and
// --violation-limit (the limit of those that do); 0 keeps the cell's.
func withLimits(sel []matrix.Cell, m matrixRun) []matrix.Cell {
	for i := range sel {
		if m.stopLimit > 0 {
			sel[i].Limit = m.stopLimit
		}
		if m.limit > 0 {
			sel[i].Args = append(slices.Clone(sel[i].Args), "--time-limit", m.limit.String())
		}
	}
	return sel
}

func listCells(w io.Writer, sel []matrix.Cell) {
	for _, c := range sel {
		fmt.Fprintf(w, "%-48s expect %-30s %s\n", c.Name(), c.ExpectString(), c.Why)
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
	failFast bool
	// prog, limit and stopLimit are --progress, --time-limit and
	// --violation-limit as given.
	prog      string
	limit     time.Duration
	stopLimit time.Duration
	// baseline is chaos gate's --baseline (0: none; test-all has none).
	baseline time.Duration
	// shrink and shrinkBudget are chaos gate's --shrink and
	// --shrink-budget.
	shrink       bool
	shrinkBudget time.Duration
}

// runBaseline runs the gate's baseline (matrix.RunBaseline) when it has
// one, and says whether the gate stops there, with which exit code: 2
// when the subject could not run (the diagnosis is printed, and the
// JUnit file has the baseline as its one failed case), 255 when the
// baseline's run failed. Otherwise the cells run.
func runBaseline(ctx context.Context, sel []matrix.Cell, r matrixRun, o matrix.Options) (int, bool) {
	if r.baseline <= 0 {
		return 0, false
	}
	c, ok := matrix.BaselineOf(sel, o.Skip, r.baseline)
	if !ok {
		return 0, false
	}
	b := matrix.RunBaseline(ctx, c, o)
	if ctx.Err() != nil {
		// An interrupted baseline completed little or nothing: that
		// says nothing about the subject.
		fmt.Fprintf(o.Out, "chaos %s: interrupted during the baseline (%s)\n", r.cmd, b.Attempt.Dir)
		return exitUnknown, true
	}
	b.Write(o.Out)
	code := exitUnknown
	switch {
	case b.HarnessFailed():
		code = exitHarness
	case !b.Stuck():
		return 0, false
	default:
		fmt.Fprintf(o.Out, "chaos %s: stopped before the cells (--baseline 0 runs them anyway)\n", r.cmd)
	}
	if r.junit != "" {
		if err := matrix.WriteBaselineJUnit(r.junit, r.cmd, b); err != nil {
			fmt.Fprintf(o.Out, "chaos %s: %v\n", r.cmd, err)
			code = exitHarness
		}
	}
	return code, true
}

// runMatrix runs the cells and writes the table, <cmd>.json, index.html
// and the JUnit file; its exit code is test-all's.
func runMatrix(c *cobra.Command, sel []matrix.Cell, r matrixRun) int {
	ctx, stdout, stderr := c.Context(), c.OutOrStdout(), c.ErrOrStderr()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "chaos %s: find own executable: %v\n", r.cmd, err)
		return exitHarness
	}
	dir := filepath.Join(r.results, r.cmd, time.Now().UTC().Format("20060102T150405Z"))
	var cell *progress.Latest
	if r.mode != progress.Off {
		cell = &progress.Latest{}
	}
	shown := progress.Start(r.mode, os.Stderr, cell.Get) // a terminal line needs the file itself
	opts := matrix.Options{Exe: exe, Results: dir, Repeat: r.repeat,
		PassRate: r.passRate, Seed: r.seed, Out: shown.Bypass(stdout), Skip: matrix.Missing(ctx), Progress: cell, Parallel: r.parallel, FailFast: r.failFast}
	if code, stop := runBaseline(ctx, sel, r, opts); stop {
		shown.Stop()
		fmt.Fprintf(stdout, "runs: %s\n", dir)
		return code
	}
	rs, runErr := matrix.Run(ctx, sel, opts)
	shown.Stop()
	code := matrix.Summary(stdout, exe, rs)
	writes := []func() error{
		func() error { return matrix.WriteJSON(filepath.Join(dir, r.cmd+".json"), rs) },
		func() error { return matrix.WriteIndex(filepath.Join(dir, "index.html"), r.cmd, exe, rs) },
	}
	if r.junit != "" {
		writes = append(writes, func() error { return matrix.WriteJUnit(r.junit, r.cmd, exe, rs) })
	}
	for _, w := range writes {
		if err := w(); err != nil {
			fmt.Fprintf(stderr, "chaos %s: %v\n", r.cmd, err)
			code = exitHarness
		}
	}
	fmt.Fprintf(stdout, "runs: %s (index: %s)\n", dir, filepath.Join(dir, "index.html"))
	if r.shrink && runErr == nil {
		shrinkFirst(ctx, rs, r, stdout, stderr)
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "chaos %s: stopped: %v\n", r.cmd, runErr)
		if code == 0 {
			code = exitUnknown
		}
	}
	return code
}

// shrinkFirst is chaos gate --shrink: the first cell judged wrong that
// expected the subject valid is shrunk within the budget (chaos shrink
// prints the minimal command). The gate's exit code stays the cells'.
func shrinkFirst(ctx context.Context, rs []matrix.CellResult, r matrixRun, stdout, stderr io.Writer) {
	dir, ok := matrix.ToShrink(rs)
	if !ok {
		fmt.Fprintf(stdout, "shrink: no cell expected valid was judged wrong: nothing to shrink\n")
		return
	}
	fmt.Fprintf(stdout, "\nshrink: the first cell judged wrong, %s\n", dir)
	code := shrinkRun(ctx, dir, shrinkFlags{budget: r.shrinkBudget, rate: shrink.DefaultRate, mode: r.mode}, stdout, stderr)
	if code != exitValid {
		fmt.Fprintf(stdout, "shrink: no minimal scenario (chaos shrink exit %d)\n", code)
	}
}
