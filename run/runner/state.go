package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/observe/progress"
)

// runState is what every part of a run shares: its folder and log, how
// far it got (status.json, and the progress line), and the one way for
// any part to stop the run at once (abort). Each part gets it, or only
// its abort, rather than the controller.
type runState struct {
	run   *store.Run
	log   *slog.Logger
	track *progress.Tracker
	// hard ends when the user asked to stop now: the janitor cleans up.
	hard context.Context

	// runCtx ends when the run must stop at once: hard, or abort (the
	// results folder cannot be written, the register died). It bounds
	// every worker operation, so none outlives the decision by more than
	// the time to record it.
	runCtx   context.Context
	abortRun context.CancelCauseFunc

	failMu     sync.Mutex
	harnessErr error // the first harness failure; the run exits 255 with it

	// status is status.json: how far the run got (see store.Status).
	statusMu sync.Mutex
	status   store.Status
}

// newRunState is the state of a run starting in folder run; cancel ends
// its runCtx once the run is over.
func newRunState(hard context.Context, run *store.Run, log *slog.Logger, track *progress.Tracker, status store.Status) (st *runState, cancel func()) {
	runCtx, abortRun := context.WithCancelCause(hard)
	return &runState{run: run, log: log, track: track, hard: hard, runCtx: runCtx, abortRun: abortRun, status: status},
		func() { abortRun(nil) }
}

// setPhase records that the run entered phase p. A status that cannot be
// written means the results folder cannot be written: the run stops.
func (s *runState) setPhase(p store.Phase) error {
	s.track.Phase(string(p))
	return s.updateStatus(func(st *store.Status) { st.Phase = p })
}

// updateStatus changes status.json under its lock. A write that fails
// stops the run (abort): a run whose progress cannot be recorded cannot
// be judged.
func (s *runState) updateStatus(change func(*store.Status)) error {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	change(&s.status)
	if err := store.WriteStatus(s.run.Path(store.StatusFile), s.status); err != nil {
		err = fmt.Errorf("results folder: %w", err)
		s.abort(err)
		return err
	}
	return nil
}

// stoppedBecause is status.json's reason the workload stopped ("" while
// it goes).
func (s *runState) stoppedBecause() string {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	return s.status.StoppedBecause
}

// abort records a harness failure and stops the run at once: the workload
// ends, operations in flight are cut short (recorded info when they still
// can be), and the run heals, tears down and exits 255 without the final
// reads or a verdict. The first failure is the one reported. Safe from any
// goroutine, any number of times.
func (s *runState) abort(err error) {
	s.failMu.Lock()
	first := s.harnessErr == nil
	if first {
		s.harnessErr = err
	}
	s.failMu.Unlock()
	if first {
		s.log.Error("harness failure: stopping the run", "err", err)
	}
	s.abortRun(err)
}

// harnessError is the first harness failure, or nil.
func (s *runState) harnessError() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.harnessErr
}

// aborted reports whether the run was stopped by a harness failure.
func (s *runState) aborted() bool { return s.harnessError() != nil }

// watch turns what fails outside the parts' own calls into an abort: the
// history writer's first error (a write or an fsync, whoever appended)
// and the fenced resource's exit, which is only expected once it is
// stopped. It returns when done closes (teardown starts).
func (s *runState) watch(hist *history.Writer, res fencedResource, done <-chan struct{}) {
	histFailed := hist.Failed()
	resDone := res.exited()
	for {
		select {
		case <-done:
			return
		case <-histFailed:
			histFailed = nil
			s.abort(fmt.Errorf("results folder: %w", hist.Err()))
		case <-resDone:
			resDone = nil
			if !res.isStopping() {
				s.abort(res.exitError())
			}
		}
	}
}
