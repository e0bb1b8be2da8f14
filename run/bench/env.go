package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/zkchaos/zkchaos/cluster/backend"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/run/janitor"
	"github.com/zkchaos/zkchaos/run/runner"
)

// env is what one bench runs on, made as `chaos run` makes it: the
// janitor first (whatever happens to the controller, it undoes the rest),
// then the backend's network and ensemble, then the register.
type env struct {
	cfg     Config
	exe     string
	run     *store.Run
	runID   string
	netMode string
	log     *slog.Logger
	jan     *janitor.Handle
	ens     *backend.Ensemble
	reg     *runner.Register
	// procEnv tags every process started with the run, so the janitor
	// and `chaos cleanup` find them by it.
	procEnv []string
}

// openEnv starts the janitor, the ensemble (waiting until it has a
// leader) and the register. On error, what was made is in the returned
// env for close.
func openEnv(ctx context.Context, cfg Config, exe string, run *store.Run, log *slog.Logger) (*env, error) {
	e := &env{cfg: cfg, exe: exe, run: run, runID: uuid.NewString()[:8], netMode: cfg.netMode(), log: log}
	jan, err := janitor.Start(exe, e.runID, run.Path(store.JanitorLog))
	if err != nil {
		return e, err
	}
	e.jan = jan
	e.procEnv = proc.Env(e.runID, jan.Owners())
	ens, err := backend.Open(ctx, cfg.Cluster, backend.Options{Nodes: cfg.Nodes, Dir: run.Path(store.ZKDir),
		TickTime: cfg.TickTime, MaxSessionTimeout: 2 * cfg.SessionTimeout, NetMode: e.netMode, RunID: e.runID,
		Owners: jan.Owners(), Env: e.procEnv, Logger: log})
	e.ens = ens
	if err != nil {
		return e, err
	}
	if ens.Net != nil {
		if err := jan.Tell(janitor.Message{Slot: &ens.Net.Slot}); err != nil {
			return e, err
		}
	}
	t := time.Now()
	if err := ens.Cluster.Start(ctx); err != nil {
		return e, fmt.Errorf("start ensemble: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := ens.Cluster.WaitReady(rctx); err != nil {
		return e, fmt.Errorf("ensemble not ready: %w", err)
	}
	log.Info("ensemble ready", "nodes", cfg.Nodes, "connect", e.connect(), "took", time.Since(t).Round(time.Millisecond).String())
	e.reg, err = runner.StartRegister(ctx, ens.Net, exe, e.procEnv, run.Path(store.ApplyLogFile), run.Path(store.RegisterLog), register.ModeOn)
	if err != nil {
		return e, err
	}
	return e, nil
}

// connect is the ensemble's client connect string.
func (e *env) connect() string { return e.ens.Cluster.ConnectString() }

// close stops the register, the ensemble and the network, then tells the
// janitor it is done (its final sweep finds anything left by tag). Every
// step runs whatever failed before it.
func (e *env) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var errs []error
	e.reg.Stop(5 * time.Second)
	if e.ens != nil {
		if err := e.ens.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if e.jan != nil {
		if err := e.jan.Finish(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}
