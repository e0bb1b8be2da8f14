package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/report/runview"
)

// cmdFirstViolation is `chaos first-violation` with args and the given
// outputs.
func cmdFirstViolation(args []string, stdout, stderr io.Writer) int {
	return execute(context.Background(), context.Background(), append([]string{"first-violation"}, args...), streams{out: stdout, err: stderr})
}

// newFirstViolationCmd is `chaos first-violation`: for each checked run
// under the folders given, the time from its first client operation to
// its first violation, and their median: how long a gate waits for a
// fault schedule to show a bug, computed from the runs' own files
// (history.jsonl, results.json), so any set of runs can be measured,
// however they were started. Exit 0 when the table is printed, 255 for
// bad input or a folder holding no run.
func newFirstViolationCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "first-violation [--checker NAME] DIR...",
		Short:   "each run's time from its first client op to its first violation, and the median",
		Long:    "For each run in the folders given (run folders, or folders holding runs), the time from its\nfirst client operation to its first violation, and the median over the runs.",
		GroupID: groupInspect,
	}
	name := c.Flags().String("checker", "double-writer", "the checker whose first violation counts (\"\": any invalid checker)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return status(mistake(c, "give one or more folders"))
		}
		var checkers []string
		if *name != "" {
			checkers = []string{*name}
		}
		return status(firstViolations(c, args, checkers))
	}
	return c
}

func firstViolations(c *cobra.Command, args, checkers []string) int {
	var dirs []string
	for _, arg := range args {
		found, err := runFolders(arg)
		if err != nil {
			fmt.Fprintf(c.ErrOrStderr(), "chaos first-violation: %v\n", err)
			return exitHarness
		}
		dirs = append(dirs, found...)
	}
	printFirsts(c.OutOrStdout(), dirs, checkers)
	return 0
}

// runFolders lists the run folders in dir (dir itself when it is one),
// oldest first.
func runFolders(dir string) ([]string, error) {
	l, err := runview.List(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if len(l.Runs) == 0 {
		return nil, fmt.Errorf("%s: no run folder (none holds a history.jsonl)", dir)
	}
	var out []string
	for _, r := range slices.Backward(l.Runs) {
		out = append(out, filepath.Join(dir, filepath.FromSlash(r.Path)))
	}
	return out, nil
}

// printFirsts prints one line per run and the median of those with a
// violation.
func printFirsts(w io.Writer, dirs, checkers []string) {
	var afters []time.Duration
	for _, d := range dirs {
		f, err := runview.ReadFirst(os.DirFS(d), checkers...)
		switch {
		case err != nil:
			fmt.Fprintf(w, "%s: %v\n", d, err)
		case !f.Found:
			fmt.Fprintf(w, "%s: first client op %s, no violation\n", d, secs(f.FirstOp))
		default:
			afters = append(afters, f.After())
			fmt.Fprintf(w, "%s: first client op %s, first violation %s (%s): after %s\n",
				d, secs(f.FirstOp), secs(f.Violation), f.Checker, secs(f.After()))
		}
	}
	if m := runview.Median(afters); m != nil {
		fmt.Fprintf(w, "%d runs, %d with a violation: median time to first violation %s after the first client op (min %s, max %s)\n",
			len(dirs), len(afters), secs(*m), secs(slices.Min(afters)), secs(slices.Max(afters)))
		return
	}
	fmt.Fprintf(w, "%d runs, none with a violation\n", len(dirs))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
