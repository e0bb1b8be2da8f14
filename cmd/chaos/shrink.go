package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/run/replay"
	"github.com/zkchaos/zkchaos/run/shrink"
)

// defaultShrinkBudget is how long chaos shrink searches by default.
const defaultShrinkBudget = 15 * time.Minute

// newShrinkCmd is `chaos shrink`: the smallest scenario, measured by
// replays, that still shows a stored run's violations.
func newShrinkCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "shrink [--budget D] [--rate NEED/OF] RUN-DIR",
		Short: "find the smallest schedule and settings that still show a run's violations, and the command that runs them",
		Long: "Shrink a stored invalid run: remove schedule entries (delta debugging), shorten holds and gaps, cut the time limit,\n" +
			"lower workers and keys, keeping each change only when replays (chaos replay) still show every violation kind of the\n" +
			"original at --rate. Stops at --budget with the best so far. Writes RUN-DIR/shrink/: minimal.json, command.txt (the\n" +
			"chaos run --schedule line that reproduces it), compare.html (the original beside the minimal run) and shrink.json\n" +
			"(every step tried), with the candidates' runs under RUN-DIR/shrink/runs.\n\n" +
			"Exit codes: 0 a minimal scenario reproducing at the rate was found, or nothing to shrink (the original was valid);\n" +
			"2 none was found within the budget, or the original was never checked, is unknown or incomplete; 255 the harness\n" +
			"failed or the input was bad: not a run, a violation that is not a gating one, an external ensemble, a shrink folder\n" +
			"already there.",
		GroupID: groupRun,
	}
	budget := c.Flags().Duration("budget", defaultShrinkBudget, "how long to search; the best scenario found by then is kept (a replay under way at the end is interrupted, healed and checked)")
	rate := c.Flags().String("rate", shrink.DefaultRate.String(), "the reproduction rate a candidate must meet, NEED/OF: its replays stop once NEED reproduced or NEED can no longer be reached")
	prog := c.Flags().String("progress", string(progress.Auto), "the current replay's "+progressUsage)
	c.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return status(mistake(c, "no run folder given (chaos shrink RUN-DIR)"))
		case len(args) > 1:
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args[1:], " ")))
		case *budget <= 0:
			return status(mistake(c, "--budget %s: must be positive", *budget))
		}
		r, err := shrink.ParseRate(*rate)
		if err != nil {
			return status(mistake(c, "--rate: %v", err))
		}
		mode, err := progress.ParseMode(*prog)
		if err != nil {
			return status(mistake(c, "%v", err))
		}
		return status(shrinkRun(c.Context(), args[0], shrinkFlags{budget: *budget, rate: r, mode: mode}, c.OutOrStdout(), c.ErrOrStderr()))
	}
	return c
}

// shrinkFlags are how chaos shrink (and chaos gate --shrink) shrinks.
type shrinkFlags struct {
	budget time.Duration
	rate   shrink.Rate
	mode   progress.Mode
}

// shrinkRun shrinks the run in dir and returns chaos shrink's exit code.
func shrinkRun(ctx context.Context, dir string, f shrinkFlags, stdout, stderr io.Writer) int {
	orig, code, ok := loadToShrink(dir, stdout, stderr)
	if !ok {
		return code
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "chaos shrink: find own executable: %v\n", err)
		return exitHarness
	}
	fmt.Fprintf(stdout, "shrinking %s within %s at rate %s, looking for %s\n", orig.Dir, f.budget, f.rate, strings.Join(orig.Kinds, ","))
	var cur *progress.Latest
	if f.mode != progress.Off {
		cur = &progress.Latest{}
	}
	shown := progress.Start(f.mode, os.Stderr, cur.Get)
	bctx, cancel := context.WithTimeout(ctx, f.budget)
	rep, err := shrink.Run(bctx, orig, shrink.Options{Exe: exe, Rate: f.rate, Out: shown.Bypass(stdout), Progress: cur})
	cancel()
	shown.Stop()
	if rep == nil {
		fmt.Fprintf(stderr, "chaos shrink: %v\n", err)
		return exitHarness
	}
	fmt.Fprintln(stdout)
	shrink.WriteTable(stdout, rep.Steps)
	fmt.Fprint(stdout, rep.Summary())
	if rep.Found() {
		fmt.Fprintf(stdout, "minimal: %s\ncompare: %s\nreproduce: %s\n", rep.Minimal, rep.Compare, rep.Command)
	}
	fmt.Fprintf(stdout, "shrink: %s\n", filepath.Join(orig.Dir, shrink.Dir, shrink.ReportFile))
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "chaos shrink: %v\n", err)
		return exitHarness
	case !rep.Found():
		return exitUnknown
	}
	return exitValid
}

// loadToShrink loads the run in dir (made absolute, so that the
// command printed runs from anywhere) and refuses what a shrink cannot
// take, as chaos replay does, plus shrink.Check; false with the exit
// code when there is nothing to shrink.
func loadToShrink(dir string, stdout, stderr io.Writer) (*replay.Original, int, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintf(stderr, "chaos shrink: %s: %v\n", dir, err)
		return nil, exitHarness, false
	}
	orig, err := replay.Load(abs)
	switch {
	case errors.Is(err, replay.ErrCannotReplay):
		fmt.Fprintf(stderr, "chaos shrink: %v\n", err)
		return nil, exitUnknown, false
	case err != nil:
		fmt.Fprintf(stderr, "chaos shrink: %v\n", err)
		return nil, exitHarness, false
	case orig.Valid():
		fmt.Fprintf(stdout, "nothing to shrink: %s is valid (gate: %s)\n", abs, strings.Join(orig.Results.Gate, ","))
		return nil, exitValid, false
	}
	if err := shrink.Check(orig); err != nil {
		fmt.Fprintf(stderr, "chaos shrink: %v\n", err)
		return nil, exitHarness, false
	}
	return orig, 0, true
}
