package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/nemesis"
)

// teardown stops a run's parts in order, once, on the normal path or
// deferred: the workers (they release and close their sessions), the
// fenced resource and the run's subtree, the ensemble and the network,
// the history; then it tells the janitor it is done and records the
// run's end in status.json. The controller hands it each part as it is
// made; a part never made is skipped.
type teardown struct {
	st  *runState
	jan finisher

	fleet *fleet
	svc   *services
	net   *network
	hist  *history.Writer
	plan  *nemesis.PlanLog

	once sync.Once
	// started closes when teardown starts: exits are expected from then
	// on (watch).
	started chan struct{}
}

// finisher is the janitor as teardown sees it: told the run is over.
type finisher interface {
	Finish(timeout time.Duration) error
}

func newTeardown(st *runState, jan finisher) *teardown {
	return &teardown{st: st, jan: jan, started: make(chan struct{})}
}

// run tears down; a failure is a harness failure (abort).
func (t *teardown) run() {
	t.once.Do(func() {
		close(t.started)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var errs []error
		if err := t.st.setPhase(store.PhaseTeardown); err != nil {
			errs = append(errs, err)
		}
		t.stopWorkers()
		errs = append(errs, t.svc.stop(ctx)...)
		if err := t.net.close(ctx); err != nil {
			errs = append(errs, err)
		}
		if t.hist != nil {
			if err := t.hist.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if t.plan != nil {
			if err := t.plan.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := t.jan.Finish(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
		if err := t.st.updateStatus(t.done); err != nil {
			errs = append(errs, err)
		}
		if failed := t.failures(errs); failed != nil {
			t.st.abort(failed)
		}
	})
}

// stopWorkers ends every worker: they release on EOF. An aborted run is
// not judged, and its ensemble may have died of the same full disk, so a
// worker stuck releasing is not waited for long.
func (t *teardown) stopWorkers() {
	if t.fleet == nil {
		return
	}
	grace := 5 * time.Second
	if t.st.aborted() {
		grace = time.Second
	}
	start := time.Now()
	t.fleet.shutdown(grace)
	t.st.log.Info("workers stopped", "took", time.Since(start).Round(time.Millisecond).String())
}

// done is the run's last status: over, and why the workload stopped.
func (t *teardown) done(s *store.Status) {
	s.Phase = store.PhaseDone
	if s.StoppedBecause == "" {
		// Torn down before the workload ended: a harness failure.
		s.StoppedBecause = "harness failure during " + "setup or workload"
		if err := t.st.harnessError(); err != nil {
			s.StoppedBecause = "harness failure: " + err.Error()
		}
	}
}

// failures judges each teardown error on its own: a cancelled context
// while the user asked for a hard stop is the stop itself, not a failure
// (logged only); anything else, such as a namespace that could not be
// removed, is a harness failure (exit 255), whatever else failed beside
// it.
func (t *teardown) failures(errs []error) error {
	var failed []error
	for _, err := range errs {
		if errors.Is(err, context.Canceled) && t.st.hard.Err() != nil {
			t.st.log.Warn("teardown during a hard stop", "err", err)
			continue
		}
		t.st.log.Error("teardown", "err", err)
		failed = append(failed, err)
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("teardown: %w", errors.Join(failed...))
}
