package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/user"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/observe/monitor"
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
		return nil, NotStarted{fmt.Errorf("--recipe %s: %w", cfg.Recipe, err)}
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

	// The janitor first: from here on, whatever happens to us is undone.
	jan, err := janitor.Start(exe, runID, run.Path(store.JanitorLog))
	if err != nil {
		return out, err
	}
	runCtx, abortRun := context.WithCancelCause(hard)
	defer abortRun(nil)
	firstFound, foundFirst := context.WithCancel(context.Background())
	defer foundFirst()
	c := &controller{firstFound: firstFound, foundFirst: foundFirst, cfg: cfg, wl: wl, exe: exe, run: run, runID: runID, log: log, jan: jan, hard: hard, t0: t0,
		runCtx: runCtx, abortRun: abortRun, watchDone: make(chan struct{}), track: o.track, resourcesSink: o.resources,
		env: proc.Env(runID, os.Getpid()), resume: rs, origin: origin,
		status: store.Status{TimeLimitNS: int64(cfg.TimeLimit), ControllerPID: os.Getpid(), Segment: segment}}
	defer c.teardown()
	if err := c.setPhase(store.PhaseSetup); err != nil {
		return out, err
	}

	netMode, err := c.setupNetwork(hard)
	if err != nil {
		return out, err
	}
	if err := c.openHistory(args, netMode); err != nil {
		return out, err
	}
	if err := c.startServices(hard); err != nil {
		return out, err
	}
	c.fleet.startAt(c.firstProcess)
	stopOnline := c.online()
	defer stopOnline()
	go c.watch()
	out.Timings.Setup = time.Since(t0)
	out.Timings.Ensemble = c.ensembleReady

	wStart := time.Now()
	if err := c.setPhase(store.PhaseWorkload); err != nil {
		return out, err
	}
	c.workload(ctx)
	out.Timings.Workload = time.Since(wStart)

	tdStart := time.Now()
	c.teardown()
	stopOnline()
	out.Timings.Teardown = time.Since(tdStart)
	out.Timings.Processes = c.fleet.spawned
	if rs != nil {
		if err := c.endSegment(); err != nil {
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

// controller holds the parts of a run while it lasts.
type controller struct {
	cfg   Config
	exe   string
	run   *store.Run
	runID string
	log   *slog.Logger
	jan   *janitor.Handle
	hard  context.Context
	t0    time.Time
	env   []string

	// resume is the soak this controller resumes (nil: a new run);
	// origin is the history's clock origin (t0, or the first segment's
	// start); firstProcess the lowest process id of this controller's
	// workers.
	resume       *Resumable
	origin       time.Time
	firstProcess int

	wl            workloads.Workload
	ens           *backend.Ensemble
	net           *netns.Network  // ens.Net: the network the run's own processes join
	zk            cluster.Cluster // ens.Cluster
	hist          *history.Writer
	rec           history.Recorder // hist, as the run's parts record: the progress tracker sees every event
	track         *progress.Tracker
	resourcesSink func(resources.Sample)
	// res is the run's fenced resource (--resource); reg is it when it
	// is the register (the election's task table and the lost-reply
	// fault are the register's alone), else nil.
	res fencedResource
	reg *registerProc
	// zkAuth is the run's ZooKeeper identity (zero with --acl off), kept
	// to remove the run's own subtree (Config.RunRoot) in teardown.
	zkAuth        recipes.Auth
	fleet         *fleet
	ensembleReady time.Duration
	// mon is the runbook monitor while the workload and the final phase
	// last; nil without one.
	mon *monitor.Monitor

	tornDown sync.Once

	// runCtx ends when the run must stop at once: hard, or abort (the
	// results folder cannot be written, the register died). It bounds
	// every worker operation, so none outlives the decision by more than
	// the time to record it.
	runCtx    context.Context
	abortRun  context.CancelCauseFunc
	watchDone chan struct{} // closed when teardown starts: exits are expected from then on

	failMu     sync.Mutex
	harnessErr error // the first harness failure; the run exits 255 with it

	// firstFound ends when --stop-at-first is set and an online check
	// found the run's first violation (firstChecker names the checker):
	// the workload stops.
	firstFound   context.Context
	foundFirst   context.CancelFunc
	firstOnce    sync.Once
	firstChecker string

	// status is status.json: how far the run got (see store.Status).
	statusMu sync.Mutex
	status   store.Status
}

// setPhase records that the run entered phase p. A status that cannot be
// written means the results folder cannot be written: the run stops.
func (c *controller) setPhase(p store.Phase) error {
	c.track.Phase(string(p))
	return c.updateStatus(func(s *store.Status) { s.Phase = p })
}

// online starts the online checks of the apply log and the history for the progress line
// (a signal only: the verdict is the full check after the run), and with
// --stop-at-first to end the workload at the first violation, and
// returns what stops them once the register has written its last entry
// (safe to call twice).
func (c *controller) online() (stop func()) {
	ctx, cancel := context.WithCancel(c.hard)
	done := make(chan struct{})
	var names []string
	for _, ck := range c.wl.Checkers() {
		names = append(names, ck.Name)
	}
	go func() {
		defer close(done)
		if err := c.track.Follow(ctx, c.run.Path(store.ApplyLogFile), names, c.log, c.stopAtFirst, progress.Fencing(c.cfg.Fencing)); err != nil {
			c.log.Warn("progress: the online check stopped; the check after the run judges the log", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// stopAtFirst is told each online checker's first violation; with
// --stop-at-first the first of them by a checker of the gate
// (Config.StopCheckers) ends the workload.
func (c *controller) stopAtFirst(checker string) {
	if !c.cfg.StopAtFirst || !slices.Contains(c.cfg.Gate, checker) {
		return
	}
	c.firstOnce.Do(func() {
		c.firstChecker = checker
		c.log.Info("stopping the workload at its first violation (--stop-at-first)", "checker", checker)
		c.foundFirst()
	})
}

// errStoppedAtFirst is why a workload stopped at its first violation.
var errStoppedAtFirst = errors.New("stopped at the first violation")

// updateStatus changes status.json under its lock. A write that fails
// stops the run (abort): a run whose progress cannot be recorded cannot
// be judged.
func (c *controller) updateStatus(change func(*store.Status)) error {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	change(&c.status)
	if err := store.WriteStatus(c.run.Path(store.StatusFile), c.status); err != nil {
		err = fmt.Errorf("results folder: %w", err)
		c.abort(err)
		return err
	}
	return nil
}

// abort records a harness failure and stops the run at once: the workload
// ends, operations in flight are cut short (recorded info when they still
// can be), and the run heals, tears down and exits 255 without the final
// reads or a verdict. The first failure is the one reported. Safe from any
// goroutine, any number of times.
func (c *controller) abort(err error) {
	c.failMu.Lock()
	first := c.harnessErr == nil
	if first {
		c.harnessErr = err
	}
	c.failMu.Unlock()
	if first {
		c.log.Error("harness failure: stopping the run", "err", err)
	}
	c.abortRun(err)
}

// harnessError is the first harness failure, or nil.
func (c *controller) harnessError() error {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	return c.harnessErr
}

// aborted reports whether the run was stopped by a harness failure.
func (c *controller) aborted() bool { return c.harnessError() != nil }

// watch turns what fails outside the controller's own calls into an
// abort: the history writer's first error (a write or an fsync, whoever
// appended) and the register's exit, which is only expected in teardown.
func (c *controller) watch() {
	histFailed := c.hist.Failed()
	res := c.resource()
	regDone := res.exited()
	for {
		select {
		case <-c.watchDone:
			return
		case <-histFailed:
			histFailed = nil
			c.abort(fmt.Errorf("results folder: %w", c.hist.Err()))
		case <-regDone:
			regDone = nil
			if !res.isStopping() {
				c.abort(res.exitError())
			}
		}
	}
}

// setupNetwork makes the run's ensemble (not started) and the network its
// own processes join, through the backend the run names, and tells the
// janitor the network's slot.
func (c *controller) setupNetwork(ctx context.Context) (string, error) {
	mode := c.cfg.NetMode()
	if c.cfg.Net == "auto" && mode == "loopback" {
		c.log.Warn("no network namespaces: every process on 127.0.0.1, partition faults unavailable", "why", netns.Available())
	}
	ens, err := backend.Open(ctx, c.cfg.Cluster, backend.Options{
		Service: c.cfg.service(), Nodes: c.cfg.Nodes, Dir: c.run.Path(store.ZKDir), TickTime: c.cfg.TickTime,
		MaxSessionTimeout: 2 * c.cfg.SessionTimeout, NetMode: mode, RunID: c.runID,
		ControllerPID: os.Getpid(), Image: c.cfg.Image, Env: c.env, ZK: c.cfg.ZK, SSH: c.cfg.SSHFlags(), Logger: c.log,
	})
	c.ens, c.net, c.zk = ens, ens.Net, ens.Cluster
	if err != nil {
		return mode, err
	}
	if c.cfg.ZK != "" || c.cfg.Hosts != "" {
		// The user's ensemble has as many servers as addresses given,
		// an ssh ensemble one per host.
		c.cfg.Nodes = len(c.zk.Nodes())
	}
	if c.net != nil {
		if err := c.jan.Tell(janitor.Message{Slot: &c.net.Slot}); err != nil {
			return mode, err
		}
	}
	return mode, nil
}

// openHistory writes test.json and opens the history: both new, or for a
// resumed soak the segments recorded and the history appended to, its
// interrupted operations completed as info.
func (c *controller) openHistory(args []string, netMode string) error {
	if c.resume == nil {
		if err := c.writeTestFile(args, netMode); err != nil {
			return err
		}
		hist, err := history.Create(c.run.Path(store.HistoryFile), c.t0)
		if err != nil {
			return err
		}
		c.hist, c.rec = hist, c.track.Recorder(hist)
		return nil
	}
	hist, a, err := appendHistory(c.run.Path(store.HistoryFile), c.origin)
	if err != nil {
		return err
	}
	c.hist, c.rec, c.firstProcess = hist, c.track.Recorder(hist), a.first
	c.log.Info("soak resumed", "segment", c.resume.segmentNo(), "interrupted_completed_info", a.interrupted, "first_process", a.first)
	return c.writeResumeTestFile(a)
}

func (c *controller) writeTestFile(args []string, netMode string) error {
	host, _ := os.Hostname()
	u := ""
	if cu, err := user.Current(); err == nil {
		u = cu.Username
	}
	tf := testFile{Config: c.cfg, RunID: c.runID, Start: c.t0, StartWall: c.t0.UnixNano(),
		ControllerPID: os.Getpid(), Executable: c.exe, Args: args, NetMode: netMode, Host: host,
		User: u, GoVersion: runtime.Version()}
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode test.json: %w", err)
	}
	if err := os.WriteFile(c.run.Path(store.TestFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write test.json: %w", err)
	}
	return nil
}

func (c *controller) startServices(ctx context.Context) error {
	pl := placement{net: c.net}
	sec, err := newRunSecrets(c.cfg.ACL == ACLOn)
	if err != nil {
		return err
	}
	c.zkAuth = sec.zk
	if err := c.startResource(ctx, pl, sec); err != nil {
		return err
	}

	zkStart := time.Now()
	zk := c.zk
	if err := zk.Start(ctx); err != nil {
		return fmt.Errorf("start ensemble: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := zk.WaitReady(rctx); err != nil {
		return fmt.Errorf("ensemble not ready: %w", err)
	}
	c.ensembleReady = time.Since(zkStart)
	c.log.Info("ensemble ready", "service", c.cfg.service(), "backend", c.cfg.Cluster, "nodes", c.cfg.Nodes, "connect", zk.ConnectString(),
		"took", c.ensembleReady.Round(time.Millisecond).String())
	if c.cfg.zooKeeper() {
		open, nodes := splitRunRoot(c.wl.Nodes(), c.cfg.RunRoot)
		if len(open) > 0 {
			// World-open whatever --acl says (runroot.go), so not logged as
			// "--acl off" by prepareNodes.
			if err := prepareNodes(ctx, zk.ConnectString(), open, recipes.Auth{}, slog.New(slog.DiscardHandler)); err != nil {
				return err
			}
			c.log.Info("run's own subtree on the external ensemble", "root", c.cfg.RunRoot, "acl", "world:anyone:cdrwa", "lock_root", c.cfg.lockRoot())
			if err := c.tellJanitorRunRoot(sec.zk); err != nil {
				return err
			}
		}
		if err := prepareNodes(ctx, zk.ConnectString(), nodes, sec.zk, c.log); err != nil {
			return err
		}
	}
	if err := c.wl.Prepare(ctx, c); err != nil {
		return fmt.Errorf("prepare the %s workload: %w", c.wl.Name(), err)
	}
	var where subjects.Flags
	c.res.where(&where)
	c.fleet = newFleet(c.cfg, c.exe, sec.workerEnv(c.env), zk.ConnectString(), where.Register, pl, c.run, c.rec, c.log, c.runCtx, c.abort)
	c.fleet.pg = where.Postgres
	return nil
}

// startResource starts the run's fenced resource (--resource).
func (c *controller) startResource(ctx context.Context, pl placement, sec runSecrets) error {
	if c.cfg.Resource == ResourcePostgres {
		pg, err := c.startPostgres(ctx, sec.register)
		if err != nil {
			return err
		}
		c.res = pg
		c.log.Info("postgres listening", "dsn", pg.srv.DSN, "fencing", c.cfg.Fencing, "pid", pg.srv.PID())
		return nil
	}
	reg, err := startRegister(ctx, pl, c.exe, c.env, sec, c.run.Path(store.ApplyLogFile), c.run.Path(store.RegisterLog), c.cfg.Fencing, c.cfg.Idempotency)
	if err != nil {
		return err
	}
	c.res, c.reg = reg, reg
	c.log.Info("register listening", "addr", reg.addr, "fencing", c.cfg.Fencing)
	return nil
}

// resource is the run's fenced resource, nil before it started (a
// controller of the tests may set reg alone).
func (c *controller) resource() fencedResource {
	switch {
	case c.res != nil:
		return c.res
	case c.reg != nil:
		return c.reg
	}
	return nil
}

// workload runs the clients and the nemesis for the time limit (or until
// ctx ends), then heals: the nemesis undoes its faults before anyone else
// is stopped, so every paused worker gets to act out its stale operation
// and every late answer is recorded.
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
	defer context.AfterFunc(c.firstFound, func() { stop(errStoppedAtFirst) })()
	seed := uint64(c.cfg.Seed)
	wl := c.wl
	c.startMonitor()
	defer c.stopMonitor()
	defer c.startSoak()()

	nem, err := nemesis.New(nemesis.Config{Names: c.cfg.Nemesis,
		Schedule: nemesis.Schedule{First: c.cfg.FirstFault, Quiet: c.cfg.NemesisInterval, Hold: c.cfg.Pause()},
		History:  c.nemesisHistory(),
		Caps:     nemesis.Caps{Cluster: c.zk.Capabilities(), WorkerNet: c.net != nil, Workload: c.wl.Name(), Service: c.cfg.service()},
		Env: nemesis.Env{Cluster: c.zk, Targets: c.fleet, Resource: c.nemesisResource(), Logger: c.log,
			Rand: rand.New(rand.NewPCG(seed, 0x6e656d))}})
	if err != nil {
		c.abort(err)
		return
	}
	if nem != nil {
		c.log.Info("nemesis", "faults", strings.Join(nem.Faults(), ","), "first", c.cfg.FirstFault.String(), "quiet", c.cfg.NemesisInterval.String(), "hold", c.cfg.Pause().String())
	}
	var clients sync.WaitGroup
	for _, s := range c.fleet.slots {
		clients.Add(1)
		r := rand.New(rand.NewPCG(seed, uint64(s.index)+1))
		go func() { defer clients.Done(); s.loop(gen, wl, r) }()
	}
	nemDone := make(chan struct{})
	go func() {
		defer close(nemDone)
		if nem != nil {
			waited := time.Now()
			c.fleet.waitFirstTries(gen)
			c.log.Info("nemesis: the workers have started; the first fault's clock starts", "waited", time.Since(waited).Round(time.Millisecond).String())
			if err := nem.Run(gen); err != nil {
				c.log.Error("nemesis", "err", err)
			}
		}
	}()
	<-gen.Done()
	why := store.StopTimeLimit
	switch err := c.harnessError(); {
	case err != nil:
		why = "harness failure: " + err.Error()
	case errors.Is(context.Cause(gen), errStoppedAtFirst):
		why = store.StoppedAtFirstBecause(c.firstChecker)
	case ctx.Err() != nil:
		why = store.StopInterrupted
		if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
			why += " (" + cause.Error() + ")"
		}
		c.log.Warn("interrupted: stopping the workload, healing, and checking what was recorded", "why", why)
	}
	reached := time.Since(wStart)
	// Heal first: paused workers resume while the clients finish.
	<-nemDone
	clients.Wait()
	c.track.Phase(string(store.PhaseFinal))
	_ = c.updateStatus(func(s *store.Status) {
		s.Phase, s.StoppedBecause, s.WorkloadNS = store.PhaseFinal, why, int64(reached)
	})
	// Every fault goes, whatever stopped the run.
	c.restore()
	if c.aborted() {
		c.log.Warn("run aborted: no final reads, no verdict", "why", why)
		return
	}
	c.log.Info("workload over; recovering", "for", c.cfg.Recovery.String())
	ctxsleep.Sleep(c.runCtx, c.cfg.Recovery)
	c.final()
	c.finalState()
	if c.runCtx.Err() == nil {
		_ = c.updateStatus(func(s *store.Status) { s.FinalPhase = true })
	}
}

// nemesisResource is the register for the faults of its own (lost-reply),
// nil for another resource (those faults are refused before the run).
func (c *controller) nemesisResource() nemesis.Resource {
	if c.reg == nil {
		return nil
	}
	return c.reg.client(3 * time.Second)
}

// finalState reads the register's final state into the controller log, for
// the reader who wants to compare it with the counter's history.
func (c *controller) finalState() {
	ctx, cancel := context.WithTimeout(c.hard, 5*time.Second)
	defer cancel()
	st, err := c.resource().reader(3 * time.Second).State(ctx)
	if err != nil {
		c.log.Warn("final register state", "err", err)
		return
	}
	c.log.Info("final register state", "state", fmt.Sprint(st))
}

// teardown stops everything in order: workers (they release and close
// their sessions), the register, the ensemble, the network; then tells the
// janitor it is done. It runs once, on the normal path or deferred.
func (c *controller) teardown() {
	c.tornDown.Do(func() {
		close(c.watchDone)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var errs []error
		if err := c.setPhase(store.PhaseTeardown); err != nil {
			errs = append(errs, err)
		}
		if c.fleet != nil {
			// Workers release on EOF; an aborted run is not judged, and its
			// ensemble may have died of the same full disk, so a worker
			// stuck releasing is not waited for long.
			grace := 5 * time.Second
			if c.aborted() {
				grace = time.Second
			}
			t := time.Now()
			c.fleet.shutdown(grace)
			c.log.Info("workers stopped", "took", time.Since(t).Round(time.Millisecond).String())
		}
		if res := c.resource(); res != nil {
			t := time.Now()
			if err := res.shut(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
			c.log.Info("fenced resource stopped", "resource", c.cfg.Resource, "took", time.Since(t).Round(time.Millisecond).String())
		}
		if c.zk != nil && c.cfg.RunRoot != "" {
			if err := removeRunRoot(ctx, c.zk.ConnectString(), c.cfg.RunRoot, c.zkAuth, c.log); err != nil {
				errs = append(errs, err)
			}
		}
		if c.ens != nil {
			if err := c.ens.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if c.hist != nil {
			if err := c.hist.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.jan.Finish(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
		if err := c.updateStatus(func(s *store.Status) {
			s.Phase = store.PhaseDone
			if s.StoppedBecause == "" {
				// Torn down before the workload ended: a harness failure.
				s.StoppedBecause = "harness failure during " + "setup or workload"
				if err := c.harnessError(); err != nil {
					s.StoppedBecause = "harness failure: " + err.Error()
				}
			}
		}); err != nil {
			errs = append(errs, err)
		}
		if failed := c.teardownFailures(errs); failed != nil {
			c.abort(failed)
		}
	})
}

// teardownFailures judges each teardown error on its own: a cancelled
// context while the user asked for a hard stop is the stop itself, not a
// failure (logged only); anything else, such as a namespace that could
// not be removed, is a harness failure (exit 255), whatever else failed
// beside it.
func (c *controller) teardownFailures(errs []error) error {
	var failed []error
	for _, err := range errs {
		if errors.Is(err, context.Canceled) && c.hard.Err() != nil {
			c.log.Warn("teardown during a hard stop", "err", err)
			continue
		}
		c.log.Error("teardown", "err", err)
		failed = append(failed, err)
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("teardown: %w", errors.Join(failed...))
}
