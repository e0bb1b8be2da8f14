package nemesis

import (
	"context"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
)

// realEnsemble starts a real local ensemble of n servers for a test that
// needs one (skipped with -short or without ZooKeeper), stopped when the
// test ends; ctx bounds the test at d. run names the processes for the
// janitor.
func realEnsemble(t *testing.T, n int, run string, d time.Duration) (context.Context, *local.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	if err := local.Available(); err != nil {
		t.Skipf("no ZooKeeper: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	c, err := local.Launch(ctx, local.Config{Nodes: n, Dir: t.TempDir(), Env: proc.Env(run, proc.Self())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return ctx, c
}
