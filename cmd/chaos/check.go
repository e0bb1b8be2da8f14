package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/run/runner"
	"github.com/zkchaos/zkchaos/workloads"
)

// newCheckCmd is `chaos check`: the checkers again on a stored run, with
// a run's exit codes.
func newCheckCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "check [--gate LIST] [--check-budget D] RUN-DIR",
		Short:   "re-check a stored run",
		Long:    "Re-run the checkers on a stored run and rewrite its results and report.\n\n" + exitCodesHelp,
		GroupID: groupRun,
	}
	gate := c.Flags().String("gate", "", "checkers that decide the verdict (default: the run's own gate); of the run's workload: "+workloads.CheckersHelp())
	budget := c.Flags().Duration("check-budget", runner.DefaultCheckBudget, "time each checker may take; over it a checker is unknown (0: no limit)")
	c.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return status(mistake(c, "no run folder given (chaos check RUN-DIR)"))
		case len(args) > 1:
			return status(mistake(c, "unexpected arguments: %s", strings.Join(args[1:], " ")))
		}
		if c.Flags().Changed("gate") {
			// Checked against the run's own workload; an explicit empty
			// list is refused rather than taken for the default.
			if err := runner.CheckGate(args[0], splitList(*gate)); err != nil {
				return status(mistake(c, "%v", err))
			}
		}
		return status(check(c, args[0], splitList(*gate), *budget))
	}
	return c
}

func check(c *cobra.Command, dir string, gate []string, budget time.Duration) int {
	if budget < 0 {
		fmt.Fprintf(c.ErrOrStderr(), "chaos check: --check-budget %s: must not be negative\n", budget)
		return exitHarness
	}
	out, err := runner.Check(c.Context(), dir, gate, 0, runner.WithBudget(budget))
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "chaos check: %v\n", err)
		return exitHarness
	}
	printSummary(c.OutOrStdout(), out)
	return exitCode(out)
}

func exitCode(c *runner.CheckOutcome) int {
	switch c.Results.Valid {
	case checker.Valid:
		return exitValid
	case checker.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

// printSummary is what a person at a terminal (or a CI log) needs: the
// verdict, each checker's, the evidence in a line or two, and where the
// report is.
func printSummary(w io.Writer, c *runner.CheckOutcome) {
	r := c.Results
	fmt.Fprintf(w, "valid: %s (gate: %s)\n", r.Valid, strings.Join(r.Gate, ","))
	printCompletion(w, r.Completion)
	for _, n := range r.Names() {
		res := r.Checkers[n]
		line := fmt.Sprintf("  %-14s %s", n, res.Valid)
		if res.Gating {
			line += " (gating)"
		}
		if res.Error != "" {
			line += ": " + res.Error
		}
		fmt.Fprintln(w, line)
	}
	for _, reason := range r.Reasons {
		fmt.Fprintf(w, "  - %s\n", reason)
	}
	printDoubleWrites(w, r)
	printLinear(w, r, filepath.Dir(c.Report))
	printStats(w, r)
	printWrongToken(w, r)
	if c.Truncated {
		fmt.Fprintln(w, "note: the history's last line was cut off (the run was killed) and was dropped")
	}
	fmt.Fprintf(w, "report: %s\n", c.Report)
}

// printCompletion says how far the run got (nothing for a run that
// recorded no completion).
func printCompletion(w io.Writer, c *checker.Completion) {
	if c == nil {
		return
	}
	reached := time.Duration(c.ReachedNS).Round(100 * time.Millisecond)
	limit := time.Duration(c.TimeLimitNS).Round(100 * time.Millisecond)
	switch {
	case c.Completed && c.Segments > 1:
		fmt.Fprintf(w, "run: %s (last segment: workload %s of %s, final phase ran; test.json lists the segments)\n", c.Why, reached, limit)
	case c.Completed && c.StoppedBecause == store.StopScheduleDone:
		fmt.Fprintf(w, "run: complete (workload %s of %s, ended after its schedule's last entry as %s asks; final phase ran)\n", reached, limit, setting.Name("StopAfterSchedule"))
	case c.Completed:
		fmt.Fprintf(w, "run: complete (workload %s of %s, final phase ran)\n", reached, limit)
	case c.StoppedAtFirst:
		fmt.Fprintf(w, "run: %s\n", c.Why)
	default:
		fmt.Fprintf(w, "run: INCOMPLETE: %s\n", c.Why)
	}
}

// printDoubleWrites shows up to three double writes.
func printDoubleWrites(w io.Writer, r checker.Results) {
	var dw fence.DoubleWriterDetails
	if res, ok := r.Checkers[fence.NameDoubleWriter]; ok && res.DecodeDetails(&dw) == nil && len(dw.Violations) > 0 {
		fmt.Fprintf(w, "double writes: %d violations, e.g.:\n", len(dw.Violations))
		for i, v := range dw.Violations {
			if i == 3 {
				break
			}
			fmt.Fprintf(w, "  %s\n", v.Message)
		}
	}
}

// printLinear names the keys that are not linearizable and their
// pictures, under the report's folder dir.
func printLinear(w io.Writer, r checker.Results, dir string) {
	for _, n := range []string{linear.NameRegister, linear.NameMutex} {
		var ld linear.LinearDetails
		if res, ok := r.Checkers[n]; ok && res.DecodeDetails(&ld) == nil && len(ld.FailingKeys) > 0 {
			fmt.Fprintf(w, "%s: not linearizable on %s\n", n, strings.Join(ld.FailingKeys, ", "))
			for _, k := range ld.FailingKeys {
				if v, ok := ld.Visualizations[k]; ok {
					fmt.Fprintf(w, "  %s: %s\n", k, filepath.Join(dir, v))
				}
			}
		}
	}
}

// printStats gives the acquire outcomes and the token rejections.
func printStats(w io.Writer, r checker.Results) {
	var st stats.StatsDetails
	if res, ok := r.Checkers[stats.Name]; ok && res.DecodeDetails(&st) == nil {
		if a, ok := st.Ops["acquire"]; ok {
			fmt.Fprintf(w, "acquire: %d ok, %d fail, %d info\n", a.OK, a.Fail, a.Info)
		}
		fmt.Fprintf(w, "token rejections: %d of %d register operations (%d writes, %d reads)\n", st.TokenRejections,
			st.Register.Entries, st.Register.RejectedWrites, st.Register.RejectedReads)
	}
}

// printWrongToken says how many token rejections hit a holder that no
// newer grant explains (a wrong token), with an example.
func printWrongToken(w io.Writer, r checker.Results) {
	var d fence.WrongTokenDetails
	res, ok := r.Checkers[fence.NameWrongToken]
	if !ok || res.DecodeDetails(&d) != nil || d.ViolationCount == 0 {
		return
	}
	fmt.Fprintf(w, "wrong token: %d of %d token rejections hit a holder no newer grant had replaced, e.g.:\n", d.ViolationCount, d.Rejections)
	for i, v := range d.Violations {
		if i == 3 {
			break
		}
		fmt.Fprintf(w, "  %s\n", v.Message)
	}
}
