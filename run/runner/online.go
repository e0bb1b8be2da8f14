package runner

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/progress"
	"github.com/zkchaos/zkchaos/workloads"
)

// The online checks of the apply log and the history, while the run
// lasts: for the progress line (a signal only: the verdict is the full
// check after the run), and with Config.StopAtFirst to end the workload
// at the first violation, found online or by a check of the run so far.

// startOnline follows the run's records with the checkers of wl: the
// online checks of the apply log and the history, and with
// Config.StopAtFirst the checks of the run so far of the gate's checkers
// that have no online check (progress.SoFarChecks). Each checker's first
// violation is told to first. It returns what stops them once the
// resource has written its last entry (safe to call twice). startWall is
// the run's start (Unix ns), which places the apply log on its clock.
func startOnline(hard context.Context, track *progress.Tracker, run *store.Run, wl workloads.Workload, cfg Config, startWall int64, first func(checker string), log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(hard)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := track.Follow(ctx, run.Path(store.ApplyLogFile), checkerNames(wl), log, first, progress.Fencing(cfg.Fencing)); err != nil {
			log.Warn("progress: the online check stopped; the check after the run judges the log", "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		if !cfg.StopAtFirst {
			return
		}
		recs := progress.Records{History: run.Path(store.HistoryFile), ApplyLog: run.Path(store.ApplyLogFile),
			Input: checker.Input{StartWall: startWall, Fencing: cfg.Fencing, SessionTimeout: cfg.SessionTimeout, Budget: cfg.CheckBudget}}
		if err := track.FollowSoFar(ctx, recs, progress.SoFarChecks(wl.Checkers(), cfg.Gate), log, first); err != nil {
			log.Warn("progress: the checks of the run so far stopped; the check after the run judges the records", "err", err)
		}
	}()
	return func() { cancel(); wg.Wait() }
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

// errStoppedAtFirst is why a workload stopped at its first violation,
// errScheduleDone why one that followed its schedule to the end stopped
// there (Config.StopAfterSchedule).
var (
	errStoppedAtFirst = errors.New("stopped at the first violation")
	errScheduleDone   = errors.New("the schedule's last entry is undone")
)
