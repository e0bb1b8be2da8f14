// Package bench measures throughput (`chaos bench`): on one ensemble, made
// as a run makes it, the raw create+delete pairs per second that bound any
// lock hand-off, each lock subject's acquisitions per second (lock+unlock,
// and the whole critical section with the register) on one hot lock and on
// 8 keys with the same number of clients, and what the harness adds to one
// acquisition. It writes bench.json with the figures, their ratios and the
// project's throughput targets (result.go), met or not. It measures; it
// judges no correctness (chaos run does).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/cpuprofile"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/run/runner"
)

// File is the name of the result in the bench folder.
const File = "bench.json"

// ProfileFile is the controller's CPU profile with --profile.
const ProfileFile = "controller.cpu.pprof"

// Config is one bench.
type Config struct {
	Clients        int
	Nodes          int
	Cluster        string
	Net            string // auto, netns or loopback, as chaos run
	TickTime       time.Duration
	SessionTimeout time.Duration
	Subjects       []string
	Quick          bool
	// Warmup and Window: each figure counts the operations of Window,
	// after Warmup.
	Warmup, Window time.Duration
	ResultsDir     string
	Name           string
	// Profile writes the controller's CPU profile into the folder.
	Profile bool
	// HelloStarts is how many times the built-in worker is started each
	// way for its exec-to-hello figure (HelloStarts by default).
	HelloStarts int
}

// Defaults is a full bench; Quick shortens the windows to a few seconds
// per figure for CI.
func Defaults() Config {
	return Config{Clients: 8, Nodes: 3, Cluster: backend.Local, Net: "auto", TickTime: 200 * time.Millisecond,
		SessionTimeout: 10 * time.Second, Subjects: DefaultSubjects, Warmup: 2 * time.Second, Window: 8 * time.Second,
		ResultsDir: "results", Name: "bench", HelloStarts: HelloStarts}
}

// QuickWindows are --quick's warm-up and window.
const (
	QuickWarmup = 500 * time.Millisecond
	QuickWindow = 1500 * time.Millisecond
)

// Validate checks everything before anything starts.
func (c Config) Validate() error {
	switch {
	case c.Clients < 1:
		return setting.Errorf("Clients", fmt.Sprint(c.Clients), "need at least 1")
	case c.Nodes < 1:
		return setting.Errorf("Nodes", fmt.Sprint(c.Nodes), "need at least 1")
	case c.HelloStarts < 1:
		return setting.Errorf("HelloStarts", fmt.Sprint(c.HelloStarts), "need at least 1")
	case c.Window <= 0:
		return setting.Errorf("Window", c.Window.String(), "must be positive")
	case c.Warmup < 0:
		return setting.Errorf("Warmup", c.Warmup.String(), "must not be negative")
	case c.SessionTimeout <= 0 || c.TickTime <= 0:
		return setting.Refused("SessionTimeout", "%s and %s must be positive", setting.Name("SessionTimeout"), setting.Name("TickTime"))
	case len(c.Subjects) == 0:
		return setting.Errorf("Subjects", "", "give at least one")
	}
	if c.Net != "auto" && c.Net != "netns" && c.Net != "loopback" {
		return setting.Errorf("Net", fmt.Sprintf("%q", c.Net), "auto, netns or loopback")
	}
	if err := backend.Validate(c.Cluster, c.netMode()); err != nil {
		return setting.Err("Cluster", "", err)
	}
	if here := backend.OnThisMachine(); !slices.Contains(here, c.Cluster) {
		return setting.Errorf("Cluster", c.Cluster, "chaos bench measures an ensemble of its own on this machine: %s", strings.Join(here, " or "))
	}
	for _, s := range c.Subjects {
		if err := subjects.Validate(s); err != nil {
			return setting.Err("Subjects", "", err)
		}
	}
	if err := store.ValidName(c.Name); err != nil {
		return setting.Err("Name", "", err)
	}
	return store.CheckBase(c.ResultsDir)
}

// netMode is the network mode a run with the same --net would use.
func (c Config) netMode() string { return runner.Config{Net: c.Net}.NetMode() }

// Run measures everything on one ensemble and writes bench.json into a new
// folder under ResultsDir/Name. ctx ending (SIGINT) stops at the next
// operation and tears down; hard ending gives up waiting (the janitor
// cleans). The result is returned with its folder, also on error when a
// folder was made.
func Run(ctx, hard context.Context, cfg Config, exe string, stderr io.Writer) (*Result, string, error) {
	if err := cfg.Validate(); err != nil {
		return nil, "", err
	}
	// Each subject's command, before anything is made, as a run does: the
	// built-in worker beside exe, Curator's worker compiled, kazoo's
	// interpreter; one whose packages are missing is refused here, not
	// once the ensemble is up.
	for _, s := range cfg.Subjects {
		if _, _, err := subjects.Command(exe, s, subjects.Flags{}); err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", setting.Name("Subjects"), s, err)
		}
	}
	if err := backend.Preflight(hard, cfg.Cluster, backend.ZooKeeper, "", false, slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
		return nil, "", err
	}
	t0 := time.Now()
	run, err := store.Create(cfg.ResultsDir, cfg.Name, t0)
	if err != nil {
		return nil, "", err
	}
	logf, err := os.Create(run.Path(store.LogFile))
	if err != nil {
		return nil, run.Dir, fmt.Errorf("controller log: %w", err)
	}
	defer logf.Close()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(stderr, logf), nil))
	if cfg.Profile {
		stop, err := cpuprofile.Start(run.Path(ProfileFile))
		if err != nil {
			return nil, run.Dir, err
		}
		defer stop()
	}
	e, err := openEnv(hard, cfg, exe, run, log)
	res := &Result{RunID: e.runID, NetMode: e.netMode, Cluster: cfg.Cluster, Nodes: cfg.Nodes, Clients: cfg.Clients,
		Quick: cfg.Quick, Warmup: cfg.Warmup.Seconds(), Window: cfg.Window.Seconds(), Start: t0}
	if cfg.Profile {
		res.Profiles = []string{ProfileFile, "worker-N.cpu.pprof (built-in workers; N the process number)"}
	}
	if err == nil {
		err = e.measure(ctx, res)
	}
	if cerr := e.close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	res.Settle()
	if werr := res.Write(run.Path(File)); werr != nil {
		err = errors.Join(err, werr)
	}
	return res, run.Dir, err
}

// measure takes every figure in turn: the built-in worker's start, the
// raw pairs, each subject, the overhead (the built-in worker's figures of
// seed when measured, else of the first subject that is a built-in
// recipe).
func (e *env) measure(ctx context.Context, res *Result) error {
	recipe := overheadRecipe(e.cfg.Subjects)
	if recipe != "" {
		hs, err := e.hellos(ctx, recipe, len(e.cfg.Subjects)*e.cfg.Clients+1)
		res.Hello = hs
		if err != nil {
			return err
		}
		for _, h := range hs {
			e.log.Info("worker start", "recipe", recipe, "way", h.Way, "median", time.Duration(h.MedianNS).String(),
				"p95", time.Duration(h.P95NS).String(), "starts", h.Starts)
		}
	}
	for _, layout := range []string{Hot, Spread} {
		f, err := e.rawPairs(ctx, layout)
		if err != nil {
			return fmt.Errorf("raw pairs %s: %w", layout, err)
		}
		e.log.Info("figure", "name", f.Name(), "per_second", fmt.Sprintf("%.1f", f.PerSec))
		res.Figures = append(res.Figures, f)
	}
	for i, s := range e.cfg.Subjects {
		figs, err := e.subjectFigures(ctx, s, i*e.cfg.Clients)
		res.Figures = append(res.Figures, figs...)
		if err != nil {
			return err
		}
	}
	if recipe == "" {
		e.log.Warn("no built-in recipe among the subjects: the worker's start and the harness overhead are not measured")
		return nil
	}
	o, err := e.overhead(ctx, recipe, len(e.cfg.Subjects)*e.cfg.Clients)
	if err != nil {
		return err
	}
	e.log.Info("overhead", "recipe", recipe, "worker", time.Duration(o.WorkerNS).String(), "in_process", time.Duration(o.DirectNS).String(),
		"fraction", fmt.Sprintf("%.3f", o.Fraction))
	res.Overhead = o
	return nil
}

// overheadRecipe is seed when measured, else the first built-in recipe
// among subjects ("" for none: Curator, kazoo and exec: subjects cannot be
// called in-process).
func overheadRecipe(subs []string) string {
	if slices.Contains(subs, Seed) {
		return Seed
	}
	for _, s := range subs {
		if slices.Contains(recipes.Names(), s) {
			return s
		}
	}
	return ""
}
