package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zkchaos/zkchaos/observe/metrics"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/observe/resources"
	"github.com/zkchaos/zkchaos/run/runner"
)

// soakDefaults are chaos run's defaults with a soak's: an hour, a
// resource sample every 10 s, a summary line a minute, and a stop at the
// first violation (when a checker of the gate can find one while the run
// lasts).
func soakDefaults() runner.Config {
	cfg := runner.Defaults()
	cfg.TimeLimit = time.Hour
	cfg.ResourcesInterval = 10 * time.Second
	cfg.SummaryInterval = time.Minute
	cfg.StopAtFirst = true
	cfg.Soak = true
	return cfg
}

// soakFlags are the flags chaos soak adds to chaos run's.
type soakFlags struct {
	keepGoing   bool
	metricsAddr string
	// resume is the run folder of a killed soak to carry on (--resume).
	resume string
}

// resumeFlags are the flags --resume takes: the rest would change the
// soak's settings, which come from the folder's test.json.
var resumeFlags = map[string]bool{"resume": true, "duration": true, "progress": true, "metrics-addr": true}

// parseSoakArgs is chaos run's parser (runParser) with a soak's defaults
// and flags, outside the command tree; like parseRunFlags, it returns the
// problem rather than writing it.
func parseSoakArgs(args []string, _ io.Writer) (runner.Config, progress.Mode, soakFlags, error) {
	p, sf := soakParser()
	cfg, mode, err := p.parseArgs(args)
	return cfg, mode, *sf, err
}

// soakParser is chaos run's parser with a soak's defaults, flags and
// checks; the soak's own flags land in the soakFlags it returns.
func soakParser() (runParser, *soakFlags) {
	sf := &soakFlags{}
	p := runParser{cmd: "chaos soak", cfg: soakDefaults(),
		name: func(wl string) string { return "soak-" + wl },
		extra: func(fs *pflag.FlagSet, cfg *runner.Config) {
			fs.DurationVar(&cfg.TimeLimit, "duration", cfg.TimeLimit, "how long the soak's workload runs (the same as --time-limit), e.g. 8h")
			fs.BoolVar(&sf.keepGoing, "keep-going", false, "run the whole --duration whatever the online checks find (default: stop at the first violation, --stop-at-first)")
			fs.DurationVar(&cfg.ResourcesInterval, "resources-interval", cfg.ResourcesInterval, "how often resource use (RSS, CPU, open files of the controller, JVMs, workers; the servers' znodes, watches, ephemerals, data dirs) is sampled into resources.jsonl")
			fs.DurationVar(&cfg.SummaryInterval, "summary-interval", cfg.SummaryInterval, "how often a summary line (elapsed, operations, faults, violations per hour, controller RSS) is logged")
			fs.StringVar(&sf.resume, "resume", "", "carry on the killed soak in this run folder (after chaos cleanup), for --duration more, with the settings of its test.json (local backend, --acl off)")
			fs.StringVar(&sf.metricsAddr, "metrics-addr", "", "serve the run's figures in the Prometheus text format at http://ADDR/metrics (loopback only: 127.0.0.1:PORT)")
		},
		finish: func(fs *pflag.FlagSet, cfg *runner.Config) error {
			if sf.resume != "" {
				return finishResume(fs, *sf)
			}
			return finishSoak(fs, cfg, *sf)
		},
	}
	return p, sf
}

// newSoakCmd is `chaos soak`: one long run whose online checks stream,
// with resource samples, a summary line a minute and, on request,
// Prometheus metrics. Exit codes as chaos run's.
func newSoakCmd(hard context.Context) *cobra.Command {
	p, sf := soakParser()
	c := &cobra.Command{
		Use:     "soak [flags]",
		Short:   "one long run with streaming checks, resource use over time and --metrics-addr",
		Long:    "One long run (--duration 8h) whose online checks stream, with resource samples, a summary line\na minute and, on request, Prometheus metrics.\n\n" + exitCodesHelp,
		GroupID: groupRun,
	}
	f := p.define(c.Flags())
	c.RunE = func(c *cobra.Command, args []string) error {
		cfg, mode, err := p.settle(c.Flags(), f, args)
		if err != nil {
			return status(settleFailed(c, err))
		}
		return status(soak(c, hard, cfg, mode, *sf))
	}
	return c
}

// finishSoak settles the flags that depend on each other: --duration and
// --time-limit are one, --keep-going undoes the default stop, and a
// workload without an online check keeps going unless told to stop (which
// validation then refuses).
func finishSoak(fs *pflag.FlagSet, cfg *runner.Config, sf soakFlags) error {
	if fs.Changed("duration") && fs.Changed("time-limit") {
		return errors.New("--duration and --time-limit are the same setting: give one")
	}
	if sf.keepGoing && fs.Changed("stop-at-first") && cfg.StopAtFirst {
		return errors.New("--keep-going and --stop-at-first contradict each other: give one")
	}
	if sf.keepGoing || (!fs.Changed("stop-at-first") && len(cfg.StopCheckers()) == 0) {
		cfg.StopAtFirst = false
	}
	if sf.metricsAddr != "" {
		return metrics.CheckAddr(sf.metricsAddr)
	}
	return nil
}

// finishResume refuses, with --resume, every flag that would change the
// soak's settings, and asks for the extra time.
func finishResume(fs *pflag.FlagSet, sf soakFlags) error {
	var bad error
	fs.Visit(func(f *pflag.Flag) {
		if bad == nil && !resumeFlags[f.Name] {
			bad = fmt.Errorf("--%s cannot be given with --resume: the soak's settings come from its test.json (only --duration, the extra time, --progress and --metrics-addr)", f.Name)
		}
	})
	if bad == nil && !fs.Changed("duration") {
		bad = errors.New("--resume needs --duration: how much longer the soak runs")
	}
	if bad == nil && sf.metricsAddr != "" {
		bad = metrics.CheckAddr(sf.metricsAddr)
	}
	return bad
}

// soak runs (or resumes) one configured soak and returns its exit code.
func soak(c *cobra.Command, hard context.Context, cfg runner.Config, mode progress.Mode, sf soakFlags) int {
	fail := func(err error) int {
		fmt.Fprintf(c.ErrOrStderr(), "chaos soak: %v\n", err)
		return exitHarness
	}
	var rs *runner.Resumable
	var err error
	if sf.resume != "" {
		// Read and refused before anything starts: bad input, exit 255.
		if rs, err = runner.LoadResume(sf.resume); err != nil {
			return fail(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("find own executable: %w", err))
	}
	var ln net.Listener
	if sf.metricsAddr != "" {
		// Bound before anything starts: a port in use is bad input.
		if ln, err = metrics.Listen(sf.metricsAddr); err != nil {
			return fail(err)
		}
	}
	if !cfg.StopAtFirst && !sf.keepGoing && rs == nil {
		fmt.Fprintf(c.ErrOrStderr(), "chaos soak: no checker of the %s workload's gate can find a violation while the run lasts; the soak runs its whole --duration (--keep-going)\n", cfg.Workload)
	}
	out, err := soakRun(c.Context(), hard, cfg, mode, rs, ln, exe)
	return finishRun("chaos soak", out, err)
}

// soakRun shows the soak's progress, serves its metrics on ln (when
// given) and runs it, or carries on rs.
func soakRun(ctx, hard context.Context, cfg runner.Config, mode progress.Mode, rs *runner.Resumable, ln net.Listener, exe string) (*runner.Outcome, error) {
	track, stderr, stopShowing := showProgress(mode)
	defer stopShowing()
	if track == nil {
		track = progress.NewTracker() // the summary line and the metrics read it
	}
	var last latestSample
	if ln != nil {
		srv := metrics.Serve(ln, metrics.Sources{Status: track.Status, Resources: last.get})
		defer srv.Close()
		fmt.Fprintf(stderr, "chaos soak: metrics at http://%s/metrics\n", srv.Addr())
	}
	if rs != nil {
		return runner.Resume(ctx, hard, rs, cfg.TimeLimit, exe, os.Args, stderr, runner.WithProgress(track), runner.WithResources(last.set))
	}
	return runner.Run(ctx, hard, cfg, exe, os.Args, stderr, runner.WithProgress(track), runner.WithResources(last.set))
}

// latestSample is the resource sample the metrics serve.
type latestSample struct {
	mu sync.Mutex
	s  resources.Sample
	ok bool
}

func (l *latestSample) set(s resources.Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s, l.ok = s, true
}

func (l *latestSample) get() (resources.Sample, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s, l.ok
}
