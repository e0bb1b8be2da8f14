package runner

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/nemesis"
)

// faultLoop is the nemesis as the run drives it: built from the run's
// faults and what the backend, the network, the workload and the service
// allow, it waits until every worker has tried to start, then injects,
// holds and undoes faults until the workload ends, undoing what is still
// in effect before it returns.
type faultLoop struct {
	nem *nemesis.Scheduler // nil: no faults
	log *slog.Logger
}

// faultEnv is what the faults act on: the ensemble, the workers, the
// fenced resource (nil unless it is the register), and where the nemesis
// records.
type faultEnv struct {
	zk        cluster.Cluster
	workerNet bool
	workload  string
	targets   nemesis.Targets
	resource  nemesis.Resource
	hist      history.Recorder
	// origin is the first client operation; log is schedule.json.
	origin *nemesis.Origin
	log    nemesis.EntryLog
	// followed, when set, is called once a followed schedule's last
	// entry is undone.
	followed func()
}

// newFaultLoop builds the scheduler of cfg's faults on env, its choices
// drawn from the run's seed.
func newFaultLoop(cfg Config, env faultEnv, log *slog.Logger) (*faultLoop, error) {
	nem, err := nemesis.New(nemesis.Config{Names: cfg.Nemesis,
		Schedule: nemesis.Schedule{First: cfg.FirstFault, Quiet: cfg.NemesisInterval, Hold: cfg.Pause()},
		History:  env.hist,
		Caps:     nemesis.Caps{Cluster: env.zk.Capabilities(), WorkerNet: env.workerNet, Workload: env.workload, Service: cfg.service()},
		Env: nemesis.Env{Cluster: env.zk, Targets: env.targets, Resource: env.resource, Logger: log,
			Rand: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6e656d))},
		Follow: cfg.Schedule, Origin: env.origin, Log: env.log, Followed: env.followed})
	if err != nil {
		return nil, err
	}
	switch {
	case nem != nil && cfg.Schedule != nil:
		log.Info("nemesis follows the schedule", "faults", strings.Join(nem.Faults(), ","))
	case nem != nil:
		log.Info("nemesis", "faults", strings.Join(nem.Faults(), ","), "first", cfg.FirstFault.String(), "quiet", cfg.NemesisInterval.String(), "hold", cfg.Pause().String())
	}
	return &faultLoop{nem: nem, log: log}, nil
}

// run starts the faults once ready returns (every worker has tried to
// start: a fault injected while they still connect leaves a run with no
// client) and until gen ends; done closes once every fault is undone.
func (l *faultLoop) run(gen context.Context, ready func(context.Context)) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		if l.nem == nil {
			return
		}
		waited := time.Now()
		ready(gen)
		l.log.Info("nemesis: the workers have started; the first fault's clock starts", "waited", time.Since(waited).Round(time.Millisecond).String())
		if err := l.nem.Run(gen); err != nil {
			l.log.Error("nemesis", "err", err)
		}
	}()
	return d
}

// validateFaults checks the faults' part of c: the fault list against
// what the run can do (when that is known, capsKnown), the schedule, and
// a time limit that holds one whole fault cycle.
func validateFaults(c Config, capsKnown bool) []error {
	if c.Schedule != nil {
		return validateSchedule(c, capsKnown)
	}
	var errs []error
	if c.TimeLimit <= 0 {
		errs = append(errs, setting.Errorf("TimeLimit", c.TimeLimit.String(), "must be positive"))
	}
	if c.StopAfterSchedule {
		errs = append(errs, setting.Refused("StopAfterSchedule", "%s needs %s: without one there is no last entry to stop after", setting.Name("StopAfterSchedule"), setting.Name("Schedule")))
	}
	if capsKnown {
		if err := nemesis.ValidateFor(c.Nemesis, c.Caps()); err != nil {
			errs = append(errs, setting.Err("Nemesis", "", err))
		}
	}
	if c.NemesisInterval <= 0 {
		errs = append(errs, setting.Errorf("NemesisInterval", c.NemesisInterval.String(), "must be positive"))
	}
	if c.FirstFault < 0 {
		errs = append(errs, setting.Errorf("FirstFault", c.FirstFault.String(), "must not be negative"))
	}
	if c.PauseFor < 0 {
		errs = append(errs, setting.Errorf("PauseFor", c.PauseFor.String(), "must not be negative"))
	}
	if c.TimeLimit > 0 && c.FirstFault >= 0 && c.PauseFor >= 0 {
		if err := c.checkTimeLimit(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkTimeLimit refuses a time limit that cannot hold one whole fault
// cycle (a fault would be cut short, or never happen, and the run still
// look like a run with faults), or, without faults, that is below
// MinTimeLimit. The message names the value at fault and the numbers.
func (c Config) checkTimeLimit() error {
	limit := setting.Name("TimeLimit")
	if len(c.Nemesis) == 1 && c.Nemesis[0] == "none" {
		if c.TimeLimit < MinTimeLimit {
			return setting.Errorf("TimeLimit", c.TimeLimit.String(), "too short; the minimum is %s", MinTimeLimit)
		}
		return nil
	}
	cycle := c.FaultCycle()
	if c.TimeLimit >= cycle {
		return nil
	}
	pause, timeout := setting.Name("PauseFor"), setting.Name("SessionTimeout")
	hold, shorten := fmt.Sprintf("%s %s", pause, c.PauseFor), pause
	if c.PauseFor == 0 {
		hold = fmt.Sprintf("pause %s (twice %s %s)", c.Pause(), timeout, c.SessionTimeout)
		shorten = fmt.Sprintf("%s (or set %s)", timeout, pause)
	}
	return setting.Refused("TimeLimit", "%s %s is shorter than one fault cycle: the minimum is %s (%s %s + %s to inject + %s); raise %s or shorten %s",
		limit, c.TimeLimit, cycle, setting.Name("FirstFault"), c.FirstFault, InjectAllowance, hold, limit, shorten)
}
