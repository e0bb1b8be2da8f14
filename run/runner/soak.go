package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/observe/resources"
)

// A soak's additions to a run (chaos soak): the resource sampler and the
// periodic summary line, both for the workload and the final phase, both
// observers only (what they cannot read is logged, never a failure).

// startSoak starts the resource sampler (Config.ResourcesInterval) and
// the summary line (Config.SummaryInterval), and returns what stops them.
func (o *observers) startSoak() (stop func()) {
	var smp *resources.Sampler
	if o.cfg.ResourcesInterval > 0 {
		s, err := resources.Start(o.st.runCtx, resources.Config{Interval: o.cfg.ResourcesInterval, Clock: o.clock,
			Path: o.st.run.Path(store.ResourcesFile), Targets: o.resourceTargets, Servers: o.serverCounts,
			DataDirs: o.dataDirs, OnSample: o.onResources, Logger: o.st.log})
		if err != nil {
			o.st.log.Warn("resource sampler not started; the run goes on without it", "err", err)
		} else {
			smp = s
			o.st.log.Info("resources sampling", "every", o.cfg.ResourcesInterval.String(), "file", store.ResourcesFile)
		}
	}
	ctx, cancel := context.WithCancel(o.st.runCtx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		o.st.track.Summarize(ctx, o.st.log, o.cfg.SummaryInterval, func() uint64 {
			last, ok := smp.Last()
			if p, found := last.Controller(); ok && found {
				return p.RSS
			}
			return 0
		})
	}()
	return func() {
		cancel()
		wg.Wait()
		if err := smp.Stop(); err != nil {
			o.st.log.Warn("resource sampler", "err", err)
		}
	}
}

// resourceTargets are the servers' JVMs (as their backend sees them: a
// container's JVM by its host PID) and the live workers.
func (o *observers) resourceTargets(ctx context.Context) []resources.Target {
	var out []resources.Target
	for _, n := range o.zk.Nodes() {
		if p, err := n.Process(ctx); err == nil && p.PID > 0 {
			out = append(out, resources.Target{Role: resources.RoleZooKeeper, ID: n.ID(), PID: p.PID})
		}
	}
	for _, w := range o.fleet.Workers() {
		if w.PID > 0 {
			out = append(out, resources.Target{Role: resources.RoleWorker, ID: w.Process, PID: w.PID})
		}
	}
	return out
}

// serverCounts are each server's znode, watch and ephemeral counts: the
// runbook monitor's latest mntr when it runs (the servers are not asked
// twice), else a mntr of their own.
func (o *observers) serverCounts(ctx context.Context) []resources.Server {
	if !o.cfg.zooKeeper() {
		var out []resources.Server
		for _, n := range o.zk.Nodes() {
			out = append(out, resources.Server{ID: n.ID(), CountsError: "not ZooKeeper (" + setting.Name("Service") + " " + o.cfg.service() + "): no znode counts"})
		}
		return out
	}
	svs, ok := o.mon.LastServers()
	if !ok {
		for _, n := range o.zk.Nodes() {
			sv := monitor.Server{ID: n.ID()}
			ans, err := cluster.FourLetter(ctx, n.ClientAddr(), "mntr")
			if err == nil {
				sv.Mntr, err = monitor.ParseMntr(ans)
			}
			if err != nil {
				sv.MntrError = err.Error()
			}
			svs = append(svs, sv)
		}
	}
	out := make([]resources.Server, len(svs))
	for i, sv := range svs {
		out[i] = resources.Server{ID: sv.ID, CountsError: sv.MntrError}
		if m := sv.Mntr; m != nil {
			out[i].Znodes, out[i].Watches, out[i].Ephemerals = &m.Znodes, &m.Watches, &m.Ephemerals
		} else if sv.MntrError == "" {
			out[i].CountsError = "no mntr answer"
		}
	}
	return out
}

// dataDirs are server id's snapshot and transaction-log directories in
// the run folder: zk/n<id>/data (local and docker) and zk/n<id>/datalog
// (docker).
func (o *observers) dataDirs(id int) []string {
	n := filepath.Join(o.st.run.Path(store.ZKDir), "n"+strconv.Itoa(id))
	return []string{filepath.Join(n, "data"), filepath.Join(n, "datalog")}
}

// onResources hands a sample to whoever asked (WithResources).
func (o *observers) onResources(s resources.Sample) {
	if o.sink != nil {
		o.sink(s)
	}
}

// readResources reads a soak's resource samples for the report, or says
// why there are none ("" and no samples for a run that is not a soak).
func readResources(path string) ([]resources.Sample, string) {
	s, _, err := resources.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, fmt.Sprintf("resources.jsonl: %v", err)
	}
	return s, ""
}
