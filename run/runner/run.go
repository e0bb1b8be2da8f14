package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/observe/resources"
	"github.com/zkchaos/zkchaos/run/janitor"
	"github.com/zkchaos/zkchaos/workloads"
)

// Outcome is what a finished run hands back to the command.
type Outcome struct {
	Run *store.Run
	// Check is the checkers' judgement of what was recorded; nil when the
	// harness failed before anything could be checked.
	Check *CheckOutcome
	// Timings of the run's phases, for the closing figures.
	Timings Timings
}

// Timings are the durations of the run's phases.
type Timings struct {
	Setup     time.Duration `json:"setup_ns"`
	Ensemble  time.Duration `json:"ensemble_ready_ns"`
	Workload  time.Duration `json:"workload_ns"`
	Teardown  time.Duration `json:"teardown_ns"`
	Total     time.Duration `json:"total_ns"`
	Processes int           `json:"worker_processes"`
}

// testFile is test.json: the configuration plus what identifies the run.
type testFile struct {
	Config
	RunID         string    `json:"run_id"`
	Start         time.Time `json:"start"`
	StartWall     int64     `json:"start_wall_ns"`
	ControllerPID int       `json:"controller_pid"`
	Executable    string    `json:"executable"`
	// Segments are the controllers that carried a resumed soak, in order
	// (absent for a run never resumed).
	Segments  []Segment `json:"segments,omitempty"`
	Args      []string  `json:"args"`
	NetMode   string    `json:"net_mode"`
	Host      string    `json:"host"`
	User      string    `json:"user"`
	GoVersion string    `json:"go_version"`
}

// NotStarted is an error found before anything of a run was made (what
// the backend needs is missing here): for the command it is bad input,
// not a harness failure, and there is nothing to clean up.
type NotStarted struct{ Err error }

func (e NotStarted) Error() string { return e.Err.Error() }
func (e NotStarted) Unwrap() error { return e.Err }

// RunOption adjusts one Run.
type RunOption func(*runOpts)

type runOpts struct {
	track     *progress.Tracker
	resources func(resources.Sample)
}

// WithProgress has the run keep t current: its phases, the operations
// and faults it records, the online checks of its apply log.
func WithProgress(t *progress.Tracker) RunOption { return func(o *runOpts) { o.track = t } }

// WithResources has the run give f each resource sample as it is taken
// (with Config.ResourcesInterval set): chaos soak's metrics.
func WithResources(f func(resources.Sample)) RunOption {
	return func(o *runOpts) { o.resources = f }
}

// Run performs one chaos run and checks it. ctx cancelled (SIGINT/SIGTERM)
// ends the workload early: the run still heals, tears down, and checks
// what it recorded. hard cancelled means stop now; the janitor cleans up.
// An error means the harness itself failed (exit 255); the outcome may
// still carry a run folder.
func Run(ctx, hard context.Context, cfg Config, exe string, args []string, stderr io.Writer, opts ...RunOption) (*Outcome, error) {
	return run(ctx, hard, cfg, nil, exe, args, stderr, opts...)
}

// Resume carries on the soak r (LoadResume) for extra more workload time,
// in its folder, and checks the whole folder at the end. As Run
// otherwise.
func Resume(ctx, hard context.Context, r *Resumable, extra time.Duration, exe string, args []string, stderr io.Writer, opts ...RunOption) (*Outcome, error) {
	cfg := r.Config
	cfg.TimeLimit = extra
	return run(ctx, hard, cfg, r, exe, args, stderr, opts...)
}

func run(ctx, hard context.Context, cfg Config, rs *Resumable, exe string, args []string, stderr io.Writer, opts ...RunOption) (*Outcome, error) {
	var o runOpts
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.StopAtFirst && o.track == nil {
		// Shown nowhere, but the online check must run to stop the run.
		o.track = progress.NewTracker()
	}
	// What the backend needs of this machine, before anything is made:
	// a failure here leaves nothing behind.
	if err := backend.Preflight(hard, cfg.Cluster, cfg.service(), cfg.Image, cfg.NoBuild, slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
		return nil, NotStarted{err}
	}
	// An ensemble the user runs must answer before anything is made.
	if err := backend.Reach(hard, cfg.Cluster, cfg.ZK, cfg.SessionTimeout, cfg.SSHFlags()); err != nil {
		return nil, NotStarted{err}
	}
	// The subject next (Curator's worker is compiled, kazoo's interpreter
	// checked, on first use): one that cannot start is refused before
	// anything of the run is made.
	if _, _, err := subjects.Command(exe, cfg.Recipe, subjects.Flags{Workload: cfg.workerWorkload(), Service: cfg.serviceFlag()}); err != nil {
		return nil, NotStarted{setting.Err("Recipe", cfg.Recipe, err)}
	}
	t0 := time.Now()
	runID := uuid.NewString()[:8]
	// On an ensemble the run does not own, its znodes go under a subtree
	// of its own (removed in teardown); the workload, built once, puts
	// its root there.
	cfg.RunRoot = backend.RunRoot(cfg.Cluster, runID)
	wl, err := cfg.NewWorkload()
	if err != nil {
		return nil, err
	}
	origin, logFlags, segment := t0, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0
	var run *store.Run
	if rs == nil {
		run, err = store.Create(cfg.ResultsDir, cfg.Name, t0)
	} else {
		run, err = store.Open(rs.Dir)
		origin, logFlags, segment = rs.origin(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, rs.segmentNo()
	}
	if err != nil {
		return nil, err
	}
	out := &Outcome{Run: run}
	logf, err := os.OpenFile(run.Path(store.LogFile), logFlags, 0o666) // os.Create's mode
	if err != nil {
		return out, fmt.Errorf("controller log: %w", err)
	}
	defer logf.Close()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(stderr, logf), &slog.HandlerOptions{Level: slog.LevelInfo}))
	if rs != nil {
		log = log.With("segment", segment)
	}
	log.Info("run starting", "dir", run.Dir, "run_id", runID, "seed", cfg.Seed)
	logSchedule(log, cfg)
	defer sweepDead(hard, log)()

	// The janitor first: from here on, whatever happens to us is undone.
	jan, err := janitor.Start(exe, runID, run.Path(store.JanitorLog))
	if err != nil {
		return out, err
	}
	st, endRun := newRunState(hard, run, log, o.track, store.Status{TimeLimitNS: int64(cfg.TimeLimit), ControllerPID: os.Getpid(), Segment: segment})
	defer endRun()
	td := newTeardown(st, jan)
	c := &controller{runState: st, cfg: cfg, wl: wl, exe: exe, runID: runID, jan: jan, td: td,
		resourcesSink: o.resources, env: proc.Env(runID, jan.Owners()), first: newFirstStop(cfg, log),
		rec: &record{st: st, exe: exe, runID: runID, t0: t0, resume: rs, origin: origin}}
	defer c.first.stop()
	defer td.run()
	if err := c.setPhase(store.PhaseSetup); err != nil {
		return out, err
	}
	if err := c.setup(args); err != nil {
		return out, err
	}
	stopOnline := startOnline(hard, c.track, run, wl, cfg, origin.UnixNano(), c.first.violation, log)
	defer stopOnline()
	go c.watch(c.rec.hist, c.svc.resource(), td.started)
	out.Timings.Setup = time.Since(t0)
	out.Timings.Ensemble = c.svc.ready

	wStart := time.Now()
	if err := c.setPhase(store.PhaseWorkload); err != nil {
		return out, err
	}
	c.workload(ctx)
	out.Timings.Workload = time.Since(wStart)

	tdStart := time.Now()
	td.run()
	stopOnline()
	out.Timings.Teardown = time.Since(tdStart)
	out.Timings.Processes = c.fleet.spawned
	if rs != nil {
		if err := c.rec.endSegment(); err != nil {
			return out, err
		}
	}

	if err := c.harnessError(); err != nil {
		return out, err
	}
	c.track.Phase("check")
	chk, err := Check(context.Background(), run.Dir, cfg.Gate, origin.UnixNano(), WithBudget(cfg.CheckBudget))
	out.Check = chk
	out.Timings.Total = time.Since(t0)
	if err != nil {
		return out, err
	}
	log.Info("run done", "valid", chk.Results.Valid, "report", run.Path(store.ReportFile),
		"total", out.Timings.Total.Round(time.Millisecond).String())
	return out, nil
}

// sweepDead removes what runs killed whole (controller and janitor at
// once) left (janitor.SweepDead), beside this run's setup rather than
// before it: nothing of this run is touched (its owners live), and its
// claim skips a slot the sweep has not freed yet. The returned wait
// keeps the run from ending before the sweep has.
func sweepDead(ctx context.Context, log *slog.Logger) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		janitor.SweepDead(ctx, log)
	}()
	return func() { <-done }
}

// checkerNames are the names of the workload's checkers.
func checkerNames(wl workloads.Workload) []string {
	var names []string
	for _, ck := range wl.Checkers() {
		names = append(names, ck.Name)
	}
	return names
}

// controller is one run while it lasts: the state its parts share, and
// the parts as they are made (network, services, fleet), each handed to
// teardown.
type controller struct {
	*runState
	cfg   Config
	wl    workloads.Workload
	exe   string
	runID string
	jan   *janitor.Handle
	env   []string

	rec   *record
	net   *network
	svc   *services
	fleet *fleet
	td    *teardown
	first *firstStop
	// resourcesSink is given a soak's resource samples (WithResources).
	resourcesSink func(resources.Sample)
}

// setup makes the run's parts in order: the network, the record
// (test.json and the history), the services, the fleet.
func (c *controller) setup(args []string) error {
	n, err := openNetwork(c.hard, c.cfg, c.run, c.runID, c.env, c.jan, c.log)
	c.net, c.td.net = n, n
	if err != nil {
		return err
	}
	c.cfg.Nodes = n.nodes(c.cfg)
	c.rec.cfg = c.cfg
	firstProcess, err := c.rec.open(args, n.mode, n.zk.ConnectString())
	c.td.hist, c.td.plan = c.rec.hist, c.rec.plan
	if err != nil {
		return err
	}
	c.svc = newServices(c.cfg, c.exe, c.env, c.run, n, c.jan, c.log)
	c.td.svc = c.svc
	if err := c.svc.start(c.hard, c.wl); err != nil {
		return err
	}
	where := c.svc.where()
	c.fleet = newFleet(c.cfg, c.exe, c.svc.workerEnv(c.env), where.ZK, where.Register, placement{net: n.net}, c.run, c.rec.rec, c.log, c.runCtx, c.abort)
	c.fleet.pg = where.Postgres
	c.fleet.startAt(firstProcess)
	c.td.fleet = c.fleet
	return nil
}

// workload runs the clients and the nemesis for the time limit (or until
// ctx ends), then heals: the nemesis undoes its faults before anyone else
// is stopped, so every paused worker gets to act out its stale operation
// and every late answer is recorded. The final phase follows.
func (c *controller) workload(ctx context.Context) {
	wStart := time.Now()
	c.track.Workload(c.cfg.TimeLimit)
	limited, stopLimited := context.WithTimeout(ctx, c.cfg.TimeLimit)
	defer stopLimited()
	// gen's cause tells what ended it first: the time limit, the
	// interrupt (ctx's cause), or the first violation.
	gen, stop := context.WithCancelCause(limited)
	defer stop(nil)
	defer context.AfterFunc(c.runCtx, func() { stop(nil) })()
	defer context.AfterFunc(c.first.found, func() { stop(errStoppedAtFirst) })()
	obs := &observers{cfg: c.cfg, st: c.runState, zk: c.net.zk, wl: c.wl, fleet: c.fleet, clock: c.rec.hist.Since,
		resumed: c.rec.resume != nil, rec: c.rec.rec, sink: c.resourcesSink}
	obs.start()
	defer obs.stop()

	env := faultEnv{zk: c.net.zk, workerNet: c.net.net != nil, workload: c.wl.Name(),
		targets: c.fleet, resource: c.svc.nemesisResource(), hist: obs.nemesisHistory(), origin: c.fleet.origin, log: c.rec.plan}
	if c.cfg.StopAfterSchedule {
		env.followed = func() {
			c.log.Info("stopping the workload: the schedule's last entry is undone (" + setting.Name("StopAfterSchedule") + ")")
			stop(errScheduleDone)
		}
	}
	faults, err := newFaultLoop(c.cfg, env, c.log)
	if err != nil {
		c.abort(err)
		return
	}
	waitClients := c.fleet.drive(gen, c.wl, uint64(c.cfg.Seed))
	nemDone := faults.run(gen, c.fleet.waitFirstTries)
	<-gen.Done()
	why := c.whyStopped(ctx, gen)
	reached := time.Since(wStart)
	// Heal first: paused workers resume while the clients finish.
	<-nemDone
	waitClients()
	c.track.Phase(string(store.PhaseFinal))
	_ = c.updateStatus(func(s *store.Status) {
		s.Phase, s.StoppedBecause, s.WorkloadNS = store.PhaseFinal, why, int64(reached)
	})
	fin := &finalPhase{st: c.runState, runID: c.runID, net: c.net.net, zk: c.net.zk, fleet: c.fleet, svc: c.svc, wl: c.wl,
		rec: c.rec.rec, nemHist: obs.nemesisHistory(), recovery: c.cfg.Recovery}
	fin.run(why)
}

// whyStopped says what ended gen, the workload's context, for
// status.json: a harness failure, the first violation, an interrupt
// (ctx), or the time limit.
func (c *controller) whyStopped(ctx, gen context.Context) string {
	switch err := c.harnessError(); {
	case err != nil:
		return "harness failure: " + err.Error()
	case errors.Is(context.Cause(gen), errStoppedAtFirst):
		return store.StoppedAtFirstBecause(c.first.checker)
	case errors.Is(context.Cause(gen), errScheduleDone):
		return store.StopScheduleDone
	case ctx.Err() != nil:
		why := store.StopInterrupted
		if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
			why += " (" + cause.Error() + ")"
		}
		c.log.Warn("interrupted: stopping the workload, healing, and checking what was recorded", "why", why)
		return why
	}
	return store.StopTimeLimit
}
