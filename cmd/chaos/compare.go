package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/report/compare"
	"github.com/zkchaos/zkchaos/report/runview"
)

// cmdCompare is `chaos compare` with args and the given outputs.
func cmdCompare(args []string, stdout, stderr io.Writer) int {
	return execute(context.Background(), context.Background(), append([]string{"compare"}, args...), streams{out: stdout, err: stderr})
}

// newCompareCmd is `chaos compare`: it writes the page showing two runs
// side by side. Exit 0 when the page is written (whatever the runs'
// verdicts), 255 for bad input.
func newCompareCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "compare [--out FILE] RUN-A RUN-B",
		Short:   "one page with two runs side by side",
		GroupID: groupInspect,
	}
	out := c.Flags().String("out", "", "the page to write (default: compare-<A>-vs-<B>.html in the results folder holding both runs)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) != 2 {
			return status(mistake(c, "give two run folders (chaos compare RUN-A RUN-B), got %d", len(args)))
		}
		return status(compareRuns(c, args, *out))
	}
	return c
}

// compareRuns writes the page of the two runs named by args to path (""
// for the default).
func compareRuns(c *cobra.Command, args []string, path string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(c.ErrOrStderr(), "chaos compare: "+format+"\n", a...)
		return exitHarness
	}
	runs := make([]*runview.Run, 2)
	dirs := make([]string, 2)
	var err error
	for i, arg := range args {
		if runs[i], dirs[i], err = loadRun(arg); err != nil {
			return fail("%v", err)
		}
	}
	if dirs[0] == dirs[1] {
		return fail("RUN-A and RUN-B are the same run (%s); give two different runs", dirs[0])
	}
	if path == "" {
		if path, err = compare.DefaultPath(dirs[0], dirs[1]); err != nil {
			return fail("%v", err)
		}
	}
	if err := compare.Write(path, runs[0], runs[1], dirs[0], dirs[1]); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(c.OutOrStdout(), "compare: %s\n", path)
	return 0
}

// loadRun reads the run folder arg names (a latest link is followed, so
// the page links the run itself) and says, on one line, why it cannot.
func loadRun(arg string) (*runview.Run, string, error) {
	dir, err := filepath.EvalSymlinks(arg)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("%s: no such folder", arg)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", arg, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("%s is not a folder", arg)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, "", fmt.Errorf("%s: %w", arg, err)
	}
	r, err := runview.Load(os.DirFS(dir), dir)
	switch {
	case errors.Is(err, runview.ErrNotRun):
		return nil, "", fmt.Errorf("%s is not a run folder (no history.jsonl); give a folder chaos run wrote, e.g. results/latest", arg)
	case errors.Is(err, runview.ErrUnchecked):
		return nil, "", fmt.Errorf("%s has no results.json (the run was never checked); run `chaos check %s` first", arg, arg)
	case err != nil:
		return nil, "", fmt.Errorf("%s: %w (`chaos check %s` rewrites results.json)", arg, err, arg)
	}
	return r, dir, nil
}
