package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zkchaos/zkchaos/report/compare"
	"github.com/zkchaos/zkchaos/report/runview"
)

// cmdCompare writes the page showing two runs side by side. Exit 0 when
// the page is written (whatever the runs' verdicts), 255 for bad input.
func cmdCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos compare", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: chaos compare [--out FILE] RUN-A RUN-B")
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "the page to write (default: compare-<A>-vs-<B>.html in the results folder holding both runs)")
	pos, err := parseWithArgs(fs, args, stderr)
	if err != nil {
		return parseExit(err)
	}
	if len(pos) != 2 {
		return parseExit(usageError(fs, stderr, "give two run folders (chaos compare RUN-A RUN-B), got %d", len(pos)))
	}
	runs := make([]*runview.Run, 2)
	dirs := make([]string, 2)
	for i, arg := range pos {
		if runs[i], dirs[i], err = loadRun(arg); err != nil {
			fmt.Fprintf(stderr, "chaos compare: %v\n", err)
			return exitHarness
		}
	}
	if dirs[0] == dirs[1] {
		fmt.Fprintf(stderr, "chaos compare: RUN-A and RUN-B are the same run (%s); give two different runs\n", dirs[0])
		return exitHarness
	}
	path := *out
	if path == "" {
		if path, err = compare.DefaultPath(dirs[0], dirs[1]); err != nil {
			fmt.Fprintf(stderr, "chaos compare: %v\n", err)
			return exitHarness
		}
	}
	if err := compare.Write(path, runs[0], runs[1], dirs[0], dirs[1]); err != nil {
		fmt.Fprintf(stderr, "chaos compare: %v\n", err)
		return exitHarness
	}
	fmt.Fprintf(stdout, "compare: %s\n", path)
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

// parseWithArgs parses flags that may come before, between or after the
// positional arguments, which it returns in order.
func parseWithArgs(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args, stderr); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
