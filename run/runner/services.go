package runner

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/run/janitor"
	"github.com/zkchaos/zkchaos/workloads"
)

// services are the run's servers: the ensemble the network part opened
// (started here), the fenced resource the locks protect (the register or
// PostgreSQL, --resource), the run's secrets, and the workload's znodes
// and resource state, prepared before any worker starts.
type services struct {
	cfg Config
	exe string
	env []string
	run *store.Run
	log *slog.Logger
	zk  cluster.Cluster
	net *netns.Network
	jan slotTeller

	sec runSecrets
	// res is the run's fenced resource; reg is it when it is the register
	// (the election's task table and the lost-reply fault are the
	// register's alone), else nil.
	res fencedResource
	reg *registerProc
	// ready is how long the ensemble took to serve.
	ready time.Duration
}

// newServices are the services of a run on n's ensemble; nothing starts
// before start.
func newServices(cfg Config, exe string, env []string, run *store.Run, n *network, jan slotTeller, log *slog.Logger) *services {
	return &services{cfg: cfg, exe: exe, env: env, run: run, log: log, zk: n.zk, net: n.net, jan: jan}
}

// start draws the run's secrets, starts the fenced resource and the
// ensemble, waits for the ensemble to serve, and prepares what the
// workload needs of both.
func (s *services) start(ctx context.Context, wl workloads.Workload) error {
	sec, err := newRunSecrets(s.cfg.ACL == ACLOn)
	if err != nil {
		return err
	}
	s.sec = sec
	if err := s.startResource(ctx); err != nil {
		return err
	}
	if err := s.startEnsemble(ctx); err != nil {
		return err
	}
	if s.cfg.zooKeeper() {
		if err := s.prepareZNodes(ctx, wl); err != nil {
			return err
		}
	}
	if err := wl.Prepare(ctx, s); err != nil {
		return fmt.Errorf("prepare the %s workload: %w", wl.Name(), err)
	}
	return nil
}

// startEnsemble starts the servers and waits until they serve.
func (s *services) startEnsemble(ctx context.Context) error {
	zkStart := time.Now()
	if err := s.zk.Start(ctx); err != nil {
		return fmt.Errorf("start ensemble: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := s.zk.WaitReady(rctx); err != nil {
		return fmt.Errorf("ensemble not ready: %w", err)
	}
	s.ready = time.Since(zkStart)
	s.log.Info("ensemble ready", "service", s.cfg.service(), "backend", s.cfg.Cluster, "nodes", s.cfg.Nodes, "connect", s.zk.ConnectString(),
		"took", s.ready.Round(time.Millisecond).String())
	return nil
}

// prepareZNodes creates the workload's znodes, the run's own subtree
// first on an ensemble the run does not own (runroot.go).
func (s *services) prepareZNodes(ctx context.Context, wl workloads.Workload) error {
	open, nodes := splitRunRoot(wl.Nodes(), s.cfg.RunRoot)
	if len(open) > 0 {
		// Told before the subtree exists: a death in between leaves
		// nothing that no sweep knows of.
		if err := s.tellJanitorRunRoot(); err != nil {
			return err
		}
		// World-open whatever the ACL setting says (runroot.go), so not
		// logged as world-writable by prepareNodes.
		if err := prepareNodes(ctx, s.zk.ConnectString(), open, recipes.Auth{}, slog.New(slog.DiscardHandler)); err != nil {
			return err
		}
		s.log.Info("run's own subtree on the external ensemble", "root", s.cfg.RunRoot, "acl", "world:anyone:cdrwa", "lock_root", s.cfg.lockRoot())
	}
	return prepareNodes(ctx, s.zk.ConnectString(), nodes, s.sec.zk, s.log)
}

// startResource starts the run's fenced resource (Config.Resource).
func (s *services) startResource(ctx context.Context) error {
	if s.cfg.Resource == ResourcePostgres {
		pg, err := s.startPostgres(ctx, s.sec.register)
		if err != nil {
			return err
		}
		s.res = pg
		s.log.Info("postgres listening", "dsn", pg.srv.DSN, "fencing", s.cfg.Fencing, "pid", pg.srv.PID())
		return nil
	}
	reg, err := startRegister(ctx, placement{net: s.net}, s.exe, s.env, s.sec, s.run.Path(store.ApplyLogFile), s.run.Path(store.RegisterLog), s.cfg.Fencing, s.cfg.Idempotency)
	if err != nil {
		return err
	}
	s.res, s.reg = reg, reg
	s.log.Info("register listening", "addr", reg.addr, "fencing", s.cfg.Fencing)
	return nil
}

// resource is the run's fenced resource, nil before it started (a test
// may set reg alone).
func (s *services) resource() fencedResource {
	switch {
	case s == nil:
		return nil
	case s.res != nil:
		return s.res
	case s.reg != nil:
		return s.reg
	}
	return nil
}

// workerEnv is base plus the secrets a worker needs.
func (s *services) workerEnv(base []string) []string { return s.sec.workerEnv(base) }

// where are the protocol flags that tell a worker where the ensemble and
// the resource are.
func (s *services) where() subjects.Flags {
	f := subjects.Flags{ZK: s.zk.ConnectString()}
	s.res.where(&f)
	return f
}

// InitTasks implements workloads.Resource through the register. A
// failure is logged here, where the run's log is: the election's growth
// during the workload has no one to return it to, and keeps its table
// (one ended by the workload's time is not worth a line).
func (s *services) InitTasks(ctx context.Context, service string, tasks []string) error {
	if err := s.hasTaskTable(); err != nil {
		return err
	}
	_, err := s.reg.client(10*time.Second).InitTasks(ctx, register.InitRequest{Service: service, Tasks: tasks})
	if err != nil {
		err = fmt.Errorf("init %d tasks of %s: %w", len(tasks), service, err)
		if ctx.Err() == nil && s.log != nil {
			s.log.Warn("task table: init failed", "err", err)
		}
	}
	return err
}

// hasTaskTable says why the run has no task table: only the register
// keeps one.
func (s *services) hasTaskTable() error {
	if s.reg == nil {
		return fmt.Errorf("the task table is the register's: %s %s has none", setting.Name("Resource"), s.cfg.Resource)
	}
	return nil
}

// Tasks implements workloads.Resource through the register's scan.
func (s *services) Tasks(ctx context.Context, service string) (map[string]bool, error) {
	if err := s.hasTaskTable(); err != nil {
		return nil, err
	}
	rep, err := s.reg.client(10*time.Second).Scan(ctx, service)
	if err != nil {
		return nil, fmt.Errorf("scan the tasks of %s: %w", service, err)
	}
	done := make(map[string]bool, len(rep.Tasks))
	for t, st := range rep.Tasks {
		done[t] = st.State == register.TaskSucceeded
	}
	return done, nil
}

// nemesisResource is the register for the faults of its own (lost-reply),
// nil for another resource (those faults are refused before the run).
func (s *services) nemesisResource() nemesis.Resource {
	if s.reg == nil {
		return nil
	}
	return s.reg.client(3 * time.Second)
}

// finalState reads the resource's final state into the controller log,
// for the reader who wants to compare it with the counter's history.
func (s *services) finalState(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.resource().reader(3 * time.Second).State(ctx)
	if err != nil {
		s.log.Warn("final register state", "err", err)
		return
	}
	s.log.Info("final register state", "state", fmt.Sprint(st))
}

// stop stops the fenced resource (its apply log is complete after it)
// and removes the run's own subtree from an ensemble it does not own;
// the ensemble itself is the network's to close.
func (s *services) stop(ctx context.Context) []error {
	if s == nil {
		return nil
	}
	var errs []error
	if res := s.resource(); res != nil {
		t := time.Now()
		if err := res.shut(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
		s.log.Info("fenced resource stopped", "resource", s.cfg.Resource, "took", time.Since(t).Round(time.Millisecond).String())
	}
	if s.zk != nil && s.cfg.RunRoot != "" {
		if err := removeRunRoot(ctx, s.zk.ConnectString(), s.cfg.RunRoot, s.sec.zk, s.log); err != nil {
			errs = append(errs, err)
		} else if err := janitor.ForgetZNodes(path.Base(s.cfg.RunRoot)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// tellJanitorRunRoot hands the janitor what it needs to remove the run's
// subtree should the controller die: the user's own addresses (the
// relays die with the controller), the root, and the run's identity,
// which goes through the janitor's stdin pipe (never a flag or a log
// line), as it goes to the workers through their environment. The same
// goes into the run's record on this machine (readable by its user
// only), for a sweep after both die at once (run/janitor's records.go).
func (s *services) tellJanitorRunRoot() error {
	cred := ""
	if s.sec.zk.Enabled() {
		cred = strings.TrimPrefix(s.sec.zk.Env(), recipes.AuthEnv+"=")
	}
	zn := janitor.ZNodes{ZK: s.cfg.ZK, Root: s.cfg.RunRoot, Auth: cred}
	if err := janitor.RecordZNodes(path.Base(s.cfg.RunRoot), s.jan.Owners(), zn); err != nil {
		return err
	}
	return s.jan.Tell(janitor.Message{ZNodes: &zn})
}

// validateServices checks the services' part of c: the lock service, the
// ensemble's size and timing, the fenced resource and its modes, the
// ACL, and where the workload's znodes go.
func validateServices(c Config) []error {
	var errs []error
	if c.Nodes < 1 || c.Nodes > 9 {
		errs = append(errs, setting.Errorf("Nodes", fmt.Sprint(c.Nodes), "must be 1..9"))
	}
	if c.TickTime < 10*time.Millisecond {
		errs = append(errs, setting.Errorf("TickTime", c.TickTime.String(), "must be at least 10ms"))
	}
	// ZooKeeper clamps a session timeout to [2, 20] ticks unless configured;
	// we raise the maximum to fit, but below two ticks it cannot go.
	if c.SessionTimeout < 2*c.TickTime {
		errs = append(errs, setting.Errorf("SessionTimeout", c.SessionTimeout.String(), "must be at least two ticks (%s)", 2*c.TickTime))
	}
	if c.Idempotency != register.IdempotencyOn && c.Idempotency != register.IdempotencyOff {
		errs = append(errs, setting.Errorf("Idempotency", fmt.Sprintf("%q", c.Idempotency), "must be on or off"))
	}
	if !slices.Contains([]string{register.ModeOn, register.ModeOff, register.ModeStrict}, c.Fencing) {
		errs = append(errs, setting.Errorf("Fencing", fmt.Sprintf("%q", c.Fencing), "must be on, off or strict"))
	}
	errs = append(errs, c.validateService()...)
	if root := backend.RunRoot(c.Cluster, "<run id>"); root != "" && c.knownWorkload() && !workloads.TraitsOf(c.Workload).UnderRunRoot {
		errs = append(errs, setting.Refused("Workload", "%s %s: not with %s %s: its znodes are at fixed paths outside the run's own subtree (%s), on an ensemble that is not the harness's to write at will; the %s workload's root goes under that subtree",
			setting.Name("Workload"), c.Workload, setting.Name("Cluster"), c.Cluster, root, workloads.With(func(t traits) bool { return t.UnderRunRoot })))
	}
	if !strings.HasPrefix(c.LockRoot, "/") || strings.HasSuffix(c.LockRoot, "/") || len(c.LockRoot) < 2 {
		errs = append(errs, setting.Errorf("LockRoot", fmt.Sprintf("%q", c.LockRoot), "must be an absolute znode path without a trailing slash"))
	}
	if c.ACL != ACLOn && c.ACL != ACLOff {
		errs = append(errs, setting.Errorf("ACL", fmt.Sprintf("%q", c.ACL), "must be on or off"))
	}
	if err := c.checkResource(); err != nil {
		errs = append(errs, err)
	}
	return errs
}
