package matrix

import (
	"cmp"
	"context"
	"sync"

	"github.com/zkchaos/zkchaos/cluster/backend"
)

// Missing is a Run's Skip: it skips the cells this machine cannot run,
// saying why: the server's package of a cell's service missing, or a
// backend the machine lacks altogether (no Docker engine answers; asked
// once per backend). Anything else a cell needs (the docker image, built
// on first use) is the run's to provide or fail on.
func Missing(ctx context.Context) func(Cell) string {
	var mu sync.Mutex
	why := map[string]string{}
	return func(c Cell) string {
		if err := backend.PreflightService(c.Service); err != nil {
			return err.Error()
		}
		name := cmp.Or(c.Cluster, backend.Local)
		mu.Lock()
		defer mu.Unlock()
		w, asked := why[name]
		if !asked {
			if err := backend.Available(ctx, name); err != nil {
				w = err.Error()
			}
			why[name] = w
		}
		return w
	}
}
