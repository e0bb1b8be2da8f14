package janitor

import (
	"context"
	"errors"
	"log/slog"

	"github.com/zkchaos/zkchaos/cluster/docker"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
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

// dockerLeftover reports whether a run's containers and networks are a
// sweep's to remove: its controller and janitor (the labels' owners) are
// both gone, or all was asked.
func dockerLeftover(r docker.Run, all bool) bool {
	return all || r.Owners.Gone()
}
