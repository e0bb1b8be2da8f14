package runner

import (
	"errors"
	"os"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/observe/resources"
	"github.com/zkchaos/zkchaos/workloads"
)

// observers watch the workload and the final phase without deciding
// anything: the runbook monitor (Config.MonitorInterval) and a soak's
// resource sampler and summary line. What they cannot read is logged,
// never a failure.
type observers struct {
	cfg   Config
	st    *runState
	zk    cluster.Cluster
	wl    workloads.Workload
	fleet *fleet
	// clock is the history's (every sample is timed as its events are);
	// resumed says the run carries a soak on (its files are appended to).
	clock   func() int64
	resumed bool
	// rec is the run's history, sink is given each resource sample
	// (WithResources).
	rec  history.Recorder
	sink func(resources.Sample)

	// mon is the runbook monitor while it runs; nil without one.
	mon      *monitor.Monitor
	stopSoak func()
}

// start starts every observer the run has.
func (o *observers) start() {
	o.startMonitor()
	o.stopSoak = o.startSoak()
}

// stop ends them, the soak's first (its summary reads the monitor).
func (o *observers) stop() {
	if o.stopSoak != nil {
		o.stopSoak()
	}
	o.stopMonitor()
}

// startMonitor starts the runbook monitor for the workload and the final
// phase (none with Config.MonitorInterval 0). It runs here, in the controller,
// and reaches the servers as the controller does; a monitor that cannot
// start is logged and the run goes on without it: it observes, it never
// decides.
func (o *observers) startMonitor() {
	if o.cfg.MonitorInterval <= 0 {
		return
	}
	if !o.cfg.zooKeeper() {
		// The runbook is ZooKeeper's (lock directories, mntr, cons): another
		// service is asked nothing.
		o.st.log.Info("runbook monitor off: it reads ZooKeeper only", "service", o.cfg.service())
		return
	}
	m, err := monitor.Start(o.st.runCtx, monitor.Config{Nodes: o.zk.Nodes(), Dirs: workloads.Dirs(o.wl),
		Interval: o.cfg.MonitorInterval, SessionTimeout: o.cfg.SessionTimeout, Clock: o.clock,
		Path: o.st.run.Path(store.MonitorFile), Append: o.resumed, Logger: o.st.log})
	if err != nil {
		o.st.log.Warn("runbook monitor not started; the run goes on without it", "err", err)
		return
	}
	o.mon = m
	o.st.log.Info("runbook monitor sampling", "every", o.cfg.MonitorInterval.String(), "bound", monitor.Bound(o.cfg.MonitorInterval).String(),
		"dirs", len(workloads.Dirs(o.wl)))
}

// stopMonitor ends the monitor; a file it could not write is logged.
func (o *observers) stopMonitor() {
	if err := o.mon.Stop(); err != nil {
		o.st.log.Warn("runbook monitor", "err", err)
	}
}

// nemesisHistory is the history the nemesis writes to: with a monitor,
// every nemesis step also asks it for a sample.
func (o *observers) nemesisHistory() history.Recorder {
	if o.mon == nil {
		return o.rec
	}
	return monitor.StepRecorder{Recorder: o.rec, M: o.mon}
}

// readMonitor reads the monitor's samples for the report, or says why
// there are none. A file that cannot be read costs the report its runbook
// section, never the verdict: the monitor only observes.
func readMonitor(path string) ([]monitor.Sample, string) {
	f, err := monitor.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, "Not recorded: the run has no monitor.jsonl (run with " + setting.Name("MonitorInterval") + " 0, or before the monitor existed)."
	case err != nil:
		return nil, "Not recorded: " + err.Error() + "."
	}
	return f.Samples, ""
}

// validateObservers checks the observers' settings: the runbook
// monitor's interval, and a soak's resource sampling and summary line.
func validateObservers(c Config) []error {
	var errs []error
	if c.ResourcesInterval != 0 && c.ResourcesInterval < MinResourcesInterval {
		errs = append(errs, setting.Errorf("ResourcesInterval", c.ResourcesInterval.String(), "must be 0 (none) or at least %s", MinResourcesInterval))
	}
	if c.SummaryInterval < 0 {
		errs = append(errs, setting.Errorf("SummaryInterval", c.SummaryInterval.String(), "must not be negative"))
	}
	if c.MonitorInterval != 0 && c.MonitorInterval < MinMonitorInterval {
		errs = append(errs, setting.Errorf("MonitorInterval", c.MonitorInterval.String(), "must be 0 (no monitor) or at least %s", MinMonitorInterval))
	}
	return errs
}
