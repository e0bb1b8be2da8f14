package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/fakeworker"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
	"github.com/zkchaos/zkchaos/observe/resources"
)

// TestObserversSample: a soak's sampler writes resources.jsonl and hands
// each sample to the sink while the observers run, and stops with them;
// without a monitor the nemesis records straight into the history.
func TestObserversSample(t *testing.T) {
	hist := history.NewMemory()
	env := faultTestEnv(t, hist)
	tf := newTestFleet(t, fakeworker.Script{}, hist, nil)
	st, cancel := newRunState(context.Background(), tf.run, testlog.Logger(t), nil, store.Status{})
	defer cancel()
	cfg := tf.cfg
	cfg.MonitorInterval, cfg.ResourcesInterval = 0, MinResourcesInterval
	wl, err := cfg.NewWorkload()
	if err != nil {
		t.Fatal(err)
	}
	var samples atomic.Int32
	o := &observers{cfg: cfg, st: st, zk: env.zk, wl: wl, fleet: tf.fleet, clock: hist.Since, rec: hist,
		sink: func(resources.Sample) { samples.Add(1) }}
	o.start()
	if o.nemesisHistory() != history.Recorder(hist) {
		t.Error("without a monitor the nemesis does not record into the history")
	}
	time.Sleep(3 * MinResourcesInterval)
	o.stop()
	after := samples.Load()
	if after < 2 {
		t.Errorf("%d samples in %s every %s", after, 3*MinResourcesInterval, MinResourcesInterval)
	}
	got, _, err := resources.ReadFile(tf.run.Path(store.ResourcesFile))
	if err != nil || len(got) != int(after) {
		t.Errorf("resources.jsonl: %d samples (%v), the sink had %d", len(got), err, after)
	}
	time.Sleep(2 * MinResourcesInterval)
	if samples.Load() != after {
		t.Error("sampling after stop")
	}
}
