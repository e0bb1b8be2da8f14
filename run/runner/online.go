package runner

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/progress"
)

// The online checks of the apply log and the history, while the run
// lasts: for the progress line (a signal only: the verdict is the full
// check after the run), and with Config.StopAtFirst to end the workload
// at the first violation.

// startOnline follows the apply log at applyLog with the checkers named,
// telling first of each one's first violation, and returns what stops it
// once the resource has written its last entry (safe to call twice).
func startOnline(hard context.Context, track *progress.Tracker, applyLog string, names []string, fencing string, first func(checker string), log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(hard)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := track.Follow(ctx, applyLog, names, log, first, progress.Fencing(fencing)); err != nil {
			log.Warn("progress: the online check stopped; the check after the run judges the log", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// firstStop ends the workload at the run's first violation found online
// by a checker of the gate (Config.StopAtFirst): found ends then, and
// checker names who found it.
type firstStop struct {
	enabled bool
	gate    []string
	log     *slog.Logger

	found   context.Context
	stop    context.CancelFunc
	once    sync.Once
	checker string
}

func newFirstStop(cfg Config, log *slog.Logger) *firstStop {
	found, stop := context.WithCancel(context.Background())
	return &firstStop{enabled: cfg.StopAtFirst, gate: cfg.Gate, log: log, found: found, stop: stop}
}

// violation is told each online checker's first violation; the first of
// them by a checker of the gate ends the workload.
func (f *firstStop) violation(checker string) {
	if !f.enabled || !slices.Contains(f.gate, checker) {
		return
	}
	f.once.Do(func() {
		f.checker = checker
		f.log.Info("stopping the workload at its first violation ("+setting.Name("StopAtFirst")+")", "checker", checker)
		f.stop()
	})
}

// errStoppedAtFirst is why a workload stopped at its first violation.
var errStoppedAtFirst = errors.New("stopped at the first violation")
