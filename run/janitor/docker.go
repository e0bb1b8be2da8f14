package janitor

import (
	"context"
	"errors"
	"log/slog"

	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/host/proc"
)

// openDocker connects to the Docker engine for a sweep. Where none answers
// (no socket, no daemon, no permission) there can be no containers of a
// run, so it returns nil, nil and says so at debug level only: most runs
// are local, and most machines have no engine. An engine that answers but
// fails is an error.
func openDocker(ctx context.Context, log *slog.Logger) (*docker.Sweeper, error) {
	s, err := docker.NewSweeper(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		log.Debug("janitor: no Docker engine; no containers to sweep", "err", err)
		return nil, nil
	}
	return s, err
}

// dockerLeftover reports whether a run's containers and networks are
// chaos cleanup's to remove: its controller (the label's PID) is gone, or
// all was asked. Judged by PID alone (the label has no start time), so a
// reused PID keeps a leftover, never the other way round.
func dockerLeftover(r docker.Run, all bool) bool {
	return all || r.ControllerPID <= 0 || !proc.Alive(r.ControllerPID)
}
