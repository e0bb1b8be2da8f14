package runner

import (
	"errors"
	"os"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/workloads"
)

// startMonitor starts the runbook monitor for the workload and the final
// phase (--monitor-interval 0: none). It runs here, in the controller,
// and reaches the servers as the controller does; a monitor that cannot
// start is logged and the run goes on without it: it observes, it never
// decides.
func (c *controller) startMonitor() {
	if c.cfg.MonitorInterval <= 0 {
		return
	}
	if !c.cfg.zooKeeper() {
		// The runbook is ZooKeeper's (lock directories, mntr, cons): another
		// service is asked nothing.
		c.log.Info("runbook monitor off: it reads ZooKeeper only", "service", c.cfg.service())
		return
	}
	m, err := monitor.Start(c.runCtx, monitor.Config{Nodes: c.net.zk.Nodes(), Dirs: workloads.Dirs(c.wl),
		Interval: c.cfg.MonitorInterval, SessionTimeout: c.cfg.SessionTimeout, Clock: c.hist.Since,
		Path: c.run.Path(store.MonitorFile), Append: c.resume != nil, Logger: c.log})
	if err != nil {
		c.log.Warn("runbook monitor not started; the run goes on without it", "err", err)
		return
	}
	c.mon = m
	c.log.Info("runbook monitor sampling", "every", c.cfg.MonitorInterval.String(), "bound", monitor.Bound(c.cfg.MonitorInterval).String(),
		"dirs", len(workloads.Dirs(c.wl)))
}

// stopMonitor ends the monitor; a file it could not write is logged.
func (c *controller) stopMonitor() {
	if err := c.mon.Stop(); err != nil {
		c.log.Warn("runbook monitor", "err", err)
	}
}

// nemesisHistory is the history the nemesis writes to: with a monitor,
// every nemesis step also asks it for a sample.
func (c *controller) nemesisHistory() history.Recorder {
	if c.mon == nil {
		return c.rec
	}
	return monitor.StepRecorder{Recorder: c.rec, M: c.mon}
}

// readMonitor reads the monitor's samples for the report, or says why
// there are none. A file that cannot be read costs the report its runbook
// section, never the verdict: the monitor only observes.
func readMonitor(path string) ([]monitor.Sample, string) {
	f, err := monitor.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, "Not recorded: the run has no monitor.jsonl (run with " + Setting("MonitorInterval") + " 0, or before the monitor existed)."
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
		errs = append(errs, fieldErrf("ResourcesInterval", c.ResourcesInterval.String(), "must be 0 (none) or at least %s", MinResourcesInterval))
	}
	if c.SummaryInterval < 0 {
		errs = append(errs, fieldErrf("SummaryInterval", c.SummaryInterval.String(), "must not be negative"))
	}
	if c.MonitorInterval != 0 && c.MonitorInterval < MinMonitorInterval {
		errs = append(errs, fieldErrf("MonitorInterval", c.MonitorInterval.String(), "must be 0 (no monitor) or at least %s", MinMonitorInterval))
	}
	return errs
}
