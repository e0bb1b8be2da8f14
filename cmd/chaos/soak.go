package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/observe/metrics"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/observe/resources"
	"github.com/zkchaos/zkchaos/run/runner"
)

// soakDefaults are chaos run's defaults with a soak's: an hour, a
// resource sample every 10 s, a summary line a minute, and a stop at the
// first violation (when the workload has an online check).
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
// and flags.
func parseSoakArgs(args []string, stderr io.Writer) (runner.Config, progress.Mode, soakFlags, error) {
	var sf soakFlags
	p := runParser{cmd: "chaos soak", cfg: soakDefaults(),
		name: func(wl string) string { return "soak-" + wl },
		extra: func(fs *flag.FlagSet, cfg *runner.Config) {
			fs.DurationVar(&cfg.TimeLimit, "duration", cfg.TimeLimit, "how long the soak's workload runs (the same as --time-limit), e.g. 8h")
			fs.BoolVar(&sf.keepGoing, "keep-going", false, "run the whole --duration whatever the online checks find (default: stop at the first violation, --stop-at-first)")
			fs.DurationVar(&cfg.ResourcesInterval, "resources-interval", cfg.ResourcesInterval, "how often resource use (RSS, CPU, open files of the controller, JVMs, workers; the servers' znodes, watches, ephemerals, data dirs) is sampled into resources.jsonl")
			fs.DurationVar(&cfg.SummaryInterval, "summary-interval", cfg.SummaryInterval, "how often a summary line (elapsed, operations, faults, violations per hour, controller RSS) is logged")
			fs.StringVar(&sf.resume, "resume", "", "carry on the killed soak in this run folder (after chaos cleanup), for --duration more, with the settings of its test.json (local backend, --acl off)")
			fs.StringVar(&sf.metricsAddr, "metrics-addr", "", "serve the run's figures in the Prometheus text format at http://ADDR/metrics (loopback only: 127.0.0.1:PORT)")
		},
		finish: func(fs *flag.FlagSet, cfg *runner.Config) error {
			if sf.resume != "" {
				return finishResume(fs, sf)
			}
			return finishSoak(fs, cfg, sf)
		},
	}
	cfg, mode, err := p.parse(args, stderr)
	return cfg, mode, sf, err
}

// finishSoak settles the flags that depend on each other: --duration and
// --time-limit are one, --keep-going undoes the default stop, and a
// workload without an online check keeps going unless told to stop (which
// validation then refuses).
func finishSoak(fs *flag.FlagSet, cfg *runner.Config, sf soakFlags) error {
	if flagSet(fs, "duration") && flagSet(fs, "time-limit") {
		return errors.New("--duration and --time-limit are the same setting: give one")
	}
	if sf.keepGoing && flagSet(fs, "stop-at-first") && cfg.StopAtFirst {
		return errors.New("--keep-going and --stop-at-first contradict each other: give one")
	}
	if sf.keepGoing || (!flagSet(fs, "stop-at-first") && len(cfg.StopCheckers()) == 0) {
		cfg.StopAtFirst = false
	}
	if sf.metricsAddr != "" {
		return metrics.CheckAddr(sf.metricsAddr)
	}
	return nil
}

// finishResume refuses, with --resume, every flag that would change the
// soak's settings, and asks for the extra time.
func finishResume(fs *flag.FlagSet, sf soakFlags) error {
	var bad error
	fs.Visit(func(f *flag.Flag) {
		if bad == nil && !resumeFlags[f.Name] {
			bad = fmt.Errorf("--%s cannot be given with --resume: the soak's settings come from its test.json (only --duration, the extra time, --progress and --metrics-addr)", f.Name)
		}
	})
	if bad == nil && !flagSet(fs, "duration") {
		bad = errors.New("--resume needs --duration: how much longer the soak runs")
	}
	if bad == nil && sf.metricsAddr != "" {
		bad = metrics.CheckAddr(sf.metricsAddr)
	}
	return bad
}

// cmdSoak is one long run whose online checks stream, with resource
// samples, a summary line a minute and, on request, Prometheus metrics.
// Exit codes as chaos run's.
func cmdSoak(ctx, hard context.Context, args []string) int {
	cfg, mode, sf, err := parseSoakArgs(args, os.Stderr)
	if errors.Is(err, errHelp) || errors.Is(err, errUsage) {
		return parseExit(err)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos soak: %v\n", err)
		return exitHarness
	}
	var rs *runner.Resumable
	if sf.resume != "" {
		// Read and refused before anything starts: bad input, exit 255.
		if rs, err = runner.LoadResume(sf.resume); err != nil {
			fmt.Fprintf(os.Stderr, "chaos soak: %v\n", err)
			return exitHarness
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos soak: find own executable: %v\n", err)
		return exitHarness
	}
	var ln net.Listener
	if sf.metricsAddr != "" {
		// Bound before anything starts: a port in use is bad input.
		if ln, err = metrics.Listen(sf.metricsAddr); err != nil {
			fmt.Fprintf(os.Stderr, "chaos soak: %v\n", err)
			return exitHarness
		}
	}
	if !cfg.StopAtFirst && !sf.keepGoing && rs == nil {
		fmt.Fprintf(os.Stderr, "chaos soak: the %s workload has no online check; the soak runs its whole --duration (--keep-going)\n", cfg.Workload)
	}
	track, stderr, stopShowing := showProgress(mode)
	if track == nil {
		track = progress.NewTracker() // the summary line and the metrics read it
	}
	var last latestSample
	if ln != nil {
		srv := metrics.Serve(ln, metrics.Sources{Status: track.Status, Resources: last.get})
		defer srv.Close()
		fmt.Fprintf(stderr, "chaos soak: metrics at http://%s/metrics\n", srv.Addr())
	}
	var out *runner.Outcome
	if rs != nil {
		out, err = runner.Resume(ctx, hard, rs, cfg.TimeLimit, exe, os.Args, stderr, runner.WithProgress(track), runner.WithResources(last.set))
	} else {
		out, err = runner.Run(ctx, hard, cfg, exe, os.Args, stderr, runner.WithProgress(track), runner.WithResources(last.set))
	}
	stopShowing()
	return finishRun("chaos soak", out, err)
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
