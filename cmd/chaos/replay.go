package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/run/replay"
	"github.com/zkchaos/zkchaos/run/shrink"
)

// newReplayCmd is `chaos replay`: a stored run again, N times, with its
// settings and schedule, and how often its violations came back.
func newReplayCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "replay [--repeat N | --rate NEED/OF] [--results DIR] RUN-DIR",
		Short: "run a stored run again with its settings and schedule, and measure how often its violations come back",
		Long: "Run a stored run again, --repeat times, each a chaos run --schedule RUN-DIR/schedule.json with the settings of\n" +
			"RUN-DIR/test.json, and say how many replays showed every violation kind (gating checker found invalid) of the\n" +
			"original: the reproduction rate, and each replay's time to its first violation. Writes replay.json beside the replays.\n" +
			"With --rate NEED/OF it replays at most OF times and stops once NEED reproduced or NEED can no longer be reached.\n\n" +
			"Exit codes: 0 nothing to reproduce (the original was valid) or every replay valid, 1 a replay invalid, 2 a replay\n" +
			"unknown, or an original that was never checked, is unknown or incomplete; 255 the harness failed or the input was bad.",
		GroupID: groupRun,
	}
	repeat := c.Flags().Int("repeat", 3, "how many replays, one after the other")
	rate := c.Flags().String("rate", "", "NEED/OF instead of --repeat: at most OF replays, stopping once NEED reproduced or NEED can no longer be reached")
	results := c.Flags().String("results", "", "folder the replays' run folders and replay.json go to (default: RUN-DIR/replay)")
	prog := c.Flags().String("progress", string(progress.Auto), "the current replay's "+progressUsage)
	c.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return status(mistake(c, "no run folder given (chaos replay RUN-DIR)"))
		case len(args) > 1:
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args[1:], " ")))
		case *repeat < 1:
			return status(mistake(c, "--repeat %d: must be at least 1", *repeat))
		case *rate != "" && c.Flags().Changed("repeat"):
			return status(mistake(c, "--rate and --repeat both given: --rate %s already says how many replays (at most its OF)", *rate))
		}
		r := shrink.Rate{Of: *repeat}
		if *rate != "" {
			var err error
			if r, err = shrink.ParseRate(*rate); err != nil {
				return status(mistake(c, "--rate: %v", err))
			}
		}
		mode, err := progress.ParseMode(*prog)
		if err != nil {
			return status(mistake(c, "%v", err))
		}
		return status(replayRun(c, args[0], r, *results, mode))
	}
	return c
}

// replayRun replays dir at most rate.Of times (stopping once rate.Need, when
// above 0, is decided) and returns chaos replay's exit code.
func replayRun(c *cobra.Command, dir string, rate shrink.Rate, results string, mode progress.Mode) int {
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	orig, err := replay.Load(dir)
	switch {
	case errors.Is(err, replay.ErrCannotReplay):
		fmt.Fprintf(stderr, "chaos replay: %v\n", err)
		return exitUnknown
	case err != nil:
		fmt.Fprintf(stderr, "chaos replay: %v\n", err)
		return exitHarness
	case orig.Valid():
		fmt.Fprintf(stdout, "nothing to reproduce: %s is valid (gate: %s)\n", dir, strings.Join(orig.Results.Gate, ","))
		return exitValid
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "chaos replay: find own executable: %v\n", err)
		return exitHarness
	}
	if results == "" {
		results = filepath.Join(dir, "replay")
	}
	times := fmt.Sprintf("%d times", rate.Of)
	if rate.Need > 0 {
		times = fmt.Sprintf("until %d reproduce, at most %d times", rate.Need, rate.Of)
	}
	fmt.Fprintf(stdout, "replaying %s %s: %s, looking for %s\n", dir, times, orig.Schedule, strings.Join(orig.Kinds, ","))
	var cur *progress.Latest
	if mode != progress.Off {
		cur = &progress.Latest{}
	}
	shown := progress.Start(mode, os.Stderr, cur.Get)
	res, runErr := replay.Run(c.Context(), orig, replay.Options{Exe: exe, Repeat: rate.Of, Need: rate.Need, Results: results,
		Out: shown.Bypass(stdout), Progress: cur})
	shown.Stop()
	code := res.Exit()
	if len(res.Replays) < rate.Of && !res.Decided() && code == exitValid {
		code = exitUnknown // interrupted: the replays that did not run prove nothing
	}
	fmt.Fprintln(stdout, res.Summary())
	path := filepath.Join(results, store.ReplayFile)
	if err := res.WriteJSON(path); err != nil {
		fmt.Fprintf(stderr, "chaos replay: %v\n", err)
		return exitHarness
	}
	fmt.Fprintf(stdout, "replays: %s (%s)\n", results, path)
	if runErr != nil {
		fmt.Fprintf(stderr, "chaos replay: stopped: %v\n", runErr)
		return exitHarness
	}
	return code
}
