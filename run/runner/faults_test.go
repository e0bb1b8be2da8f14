package runner

import (
	"context"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

// faultTestEnv is a fault environment on an unstarted one-server local
// ensemble (its capabilities are the local backend's) and a fleet of
// fake workers that never started.
func faultTestEnv(t *testing.T, hist history.Recorder) faultEnv {
	t.Helper()
	if err := local.Available(); err != nil {
		t.Skipf("no ZooKeeper: %v", err)
	}
	cfg := Defaults()
	cfg.Nodes, cfg.Net = 1, "loopback"
	run, err := store.Create(t.TempDir(), "faults", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	n, err := openNetwork(context.Background(), cfg, run, "test-runner-faults", nil, &tellings{}, testlog.Logger(t))
	t.Cleanup(func() { _ = n.close(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	tf := newTestFleet(t, fakeworker.Script{}, hist, nil)
	return faultEnv{zk: n.zk, workload: cfg.Workload, targets: tf.fleet, hist: hist}
}

// TestFaultLoopNone: without faults the loop ends at once, without
// waiting for the workers.
func TestFaultLoopNone(t *testing.T) {
	hist := history.NewMemory()
	cfg := Defaults()
	cfg.Nemesis = []string{"none"}
	l, err := newFaultLoop(cfg, faultTestEnv(t, hist), testlog.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.run(context.Background(), func(context.Context) { t.Error("waited for the workers without faults") }):
	case <-time.After(5 * time.Second):
		t.Fatal("a loop without faults did not end")
	}
}

// TestFaultLoopWaitsForWorkers: no fault is injected before every worker
// tried to start; once they have, the first fault comes (here it fails:
// no worker is alive to pause, and the history says so).
func TestFaultLoopWaitsForWorkers(t *testing.T) {
	hist := history.NewMemory()
	cfg := Defaults()
	cfg.Nemesis = []string{"pause-worker"}
	l, err := newFaultLoop(cfg, faultTestEnv(t, hist), testlog.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	gen, stop := context.WithCancel(context.Background())
	defer stop()
	release := make(chan struct{})
	done := l.run(gen, func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	time.Sleep(300 * time.Millisecond)
	if evs := hist.Events(); len(evs) != 0 {
		t.Fatalf("the nemesis acted before the workers tried to start: %+v", evs)
	}
	close(release)
	deadline := time.Now().Add(20 * time.Second)
	for len(hist.Events()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
	evs := hist.Events()
	if len(evs) == 0 || evs[0].Process != history.Nemesis || evs[0].F != "pause" {
		t.Fatalf("no fault once the workers tried: %+v", evs)
	}
}
