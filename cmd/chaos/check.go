package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/run/runner"
	"github.com/zkchaos/zkchaos/workloads"
)

func cmdCheck(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("chaos check", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: chaos check [--gate LIST] [--check-budget D] RUN-DIR")
		fs.PrintDefaults()
	}
	gate := fs.String("gate", "", "checkers that decide the verdict (default: the run's own gate); of the run's workload: "+workloads.CheckersHelp())
	budget := fs.Duration("check-budget", runner.DefaultCheckBudget, "time each checker may take; over it a checker is unknown (0: no limit)")
	// Accept the run folder before or after the flags.
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return parseExit(err)
	}
	if dir == "" && fs.NArg() > 0 {
		dir = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return parseExit(usageError(fs, os.Stderr, "unexpected arguments: %s", strings.Join(fs.Args(), " ")))
	}
	if dir == "" {
		return parseExit(usageError(fs, os.Stderr, "no run folder given (chaos check RUN-DIR)"))
	}
	if gateSet(fs) {
		if err := runner.CheckGate(dir, splitList(*gate)); err != nil {
			return parseExit(usageError(fs, os.Stderr, "%v", err))
		}
	}
	if *budget < 0 {
		fmt.Fprintf(os.Stderr, "chaos check: --check-budget %s: must not be negative\n", *budget)
		return exitHarness
	}
	out, err := runner.Check(ctx, dir, splitList(*gate), 0, runner.WithBudget(*budget))
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos check: %v\n", err)
		return exitHarness
	}
	printSummary(os.Stdout, out)
	return exitCode(out)
}

// gateSet reports whether --gate was given, so that an explicit empty
// list is refused rather than taken for the default.
func gateSet(fs *flag.FlagSet) bool { return flagSet(fs, "gate") }

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
	if c := r.Completion; c != nil {
		switch {
		case c.Completed && c.Segments > 1:
			fmt.Fprintf(w, "run: %s (last segment: workload %s of %s, final phase ran; test.json lists the segments)\n", c.Why,
				time.Duration(c.ReachedNS).Round(100*time.Millisecond), time.Duration(c.TimeLimitNS).Round(100*time.Millisecond))
		case c.Completed:
			fmt.Fprintf(w, "run: complete (workload %s of %s, final phase ran)\n",
				time.Duration(c.ReachedNS).Round(100*time.Millisecond), time.Duration(c.TimeLimitNS).Round(100*time.Millisecond))
		case c.StoppedAtFirst:
			fmt.Fprintf(w, "run: %s\n", c.Why)
		default:
			fmt.Fprintf(w, "run: INCOMPLETE: %s\n", c.Why)
		}
	}
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
	for _, n := range []string{linear.NameRegister, linear.NameMutex} {
		var ld linear.LinearDetails
		if res, ok := r.Checkers[n]; ok && res.DecodeDetails(&ld) == nil && len(ld.FailingKeys) > 0 {
			fmt.Fprintf(w, "%s: not linearizable on %s\n", n, strings.Join(ld.FailingKeys, ", "))
			for _, k := range ld.FailingKeys {
				if v, ok := ld.Visualizations[k]; ok {
					fmt.Fprintf(w, "  %s: %s\n", k, filepath.Join(filepath.Dir(c.Report), v))
				}
			}
		}
	}
	var st stats.StatsDetails
	if res, ok := r.Checkers[stats.Name]; ok && res.DecodeDetails(&st) == nil {
		if a, ok := st.Ops["acquire"]; ok {
			fmt.Fprintf(w, "acquire: %d ok, %d fail, %d info\n", a.OK, a.Fail, a.Info)
		}
		fmt.Fprintf(w, "token rejections: %d of %d register operations (%d writes, %d reads)\n", st.TokenRejections,
			st.Register.Entries, st.Register.RejectedWrites, st.Register.RejectedReads)
	}
	printWrongToken(w, r)
	if c.Truncated {
		fmt.Fprintln(w, "note: the history's last line was cut off (the run was killed) and was dropped")
	}
	fmt.Fprintf(w, "report: %s\n", c.Report)
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
