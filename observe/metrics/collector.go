package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/resources"
)

var (
	descOps        = prometheus.NewDesc("zkchaos_ops_total", "Clients' completed operations by operation and outcome (ok, fail, info).", []string{"f", "outcome"}, nil)
	descFaults     = prometheus.NewDesc("zkchaos_faults_total", "Faults injected so far.", nil, nil)
	descViolations = prometheus.NewDesc("zkchaos_violations_total", "Violations found by each online checker so far (a signal: the verdict is the check after the run).", []string{"checker"}, nil)
	descStopped    = prometheus.NewDesc("zkchaos_online_check_stopped", "1 when the online checker stopped early (its log was damaged).", []string{"checker"}, nil)
	descElapsed    = prometheus.NewDesc("zkchaos_workload_elapsed_seconds", "Time the workload has run.", nil, nil)
	descRSS        = prometheus.NewDesc("zkchaos_process_resident_memory_bytes", "Resident set of the run's processes (workers summed).", []string{"role", "id"}, nil)
	descCPU        = prometheus.NewDesc("zkchaos_process_cpu_seconds_total", "User and system CPU seconds of the run's processes (live workers summed).", []string{"role", "id"}, nil)
	descFiles      = prometheus.NewDesc("zkchaos_process_open_fds", "Open file descriptors of the run's processes (workers summed).", []string{"role", "id"}, nil)
	descWorkers    = prometheus.NewDesc("zkchaos_workers", "Live worker processes in the latest sample.", nil, nil)
	descZnodes     = prometheus.NewDesc("zkchaos_server_znodes", "A server's znode count (mntr zk_znode_count).", []string{"server"}, nil)
	descWatches    = prometheus.NewDesc("zkchaos_server_watches", "A server's watch count (mntr zk_watch_count).", []string{"server"}, nil)
	descEphemerals = prometheus.NewDesc("zkchaos_server_ephemerals", "A server's ephemeral count (mntr zk_ephemerals_count).", []string{"server"}, nil)
	descData       = prometheus.NewDesc("zkchaos_server_data_bytes", "Size of a server's data directories (snapshots, transaction logs).", []string{"server"}, nil)
	descSampleAge  = prometheus.NewDesc("zkchaos_resources_sample_time_seconds", "When the latest resource sample was taken, on the run's clock.", nil, nil)
)

// descLimit's help names a setting, so it is made at its first use: the
// command registers the settings' names after the package's variables are
// set (setting.Register).
var descLimit = sync.OnceValue(func() *prometheus.Desc {
	return prometheus.NewDesc("zkchaos_workload_limit_seconds", "The workload's time limit ("+setting.Name("Duration")+").", nil, nil)
})

// collector reads the run's figures at each scrape.
type collector struct{ src Sources }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOps, descFaults, descViolations, descStopped, descElapsed, descLimit(),
		descRSS, descCPU, descFiles, descWorkers, descZnodes, descWatches, descEphemerals, descData, descSampleAge} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Status != nil {
		if st, ok := c.src.Status(); ok {
			for _, o := range st.Ops {
				ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(o.OK), o.F, "ok")
				ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(o.Fail), o.F, "fail")
				ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(o.Info), o.F, "info")
			}
			ch <- prometheus.MustNewConstMetric(descFaults, prometheus.CounterValue, float64(st.Faults))
			for _, oc := range st.Online {
				ch <- prometheus.MustNewConstMetric(descViolations, prometheus.CounterValue, float64(oc.Violations), oc.Name)
				ch <- prometheus.MustNewConstMetric(descStopped, prometheus.GaugeValue, b2f(oc.Stopped != ""), oc.Name)
			}
			ch <- prometheus.MustNewConstMetric(descElapsed, prometheus.GaugeValue, st.Elapsed.Seconds())
			ch <- prometheus.MustNewConstMetric(descLimit(), prometheus.GaugeValue, st.Limit.Seconds())
		}
	}
	if c.src.Resources != nil {
		if s, ok := c.src.Resources(); ok {
			collectSample(ch, s)
		}
	}
}

func collectSample(ch chan<- prometheus.Metric, s resources.Sample) {
	ch <- prometheus.MustNewConstMetric(descSampleAge, prometheus.GaugeValue, float64(s.TimeNS)/1e9)
	workers := 0
	for _, p := range s.Procs {
		if p.Role == resources.RoleWorker {
			workers++
			continue
		}
		id := strconv.Itoa(p.ID)
		ch <- prometheus.MustNewConstMetric(descRSS, prometheus.GaugeValue, float64(p.RSS), p.Role, id)
		ch <- prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, p.CPU, p.Role, id)
		ch <- prometheus.MustNewConstMetric(descFiles, prometheus.GaugeValue, float64(p.OpenFiles), p.Role, id)
	}
	rss, cpu, files := s.Total(resources.RoleWorker)
	ch <- prometheus.MustNewConstMetric(descRSS, prometheus.GaugeValue, float64(rss), resources.RoleWorker, "all")
	ch <- prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, cpu, resources.RoleWorker, "all")
	ch <- prometheus.MustNewConstMetric(descFiles, prometheus.GaugeValue, float64(files), resources.RoleWorker, "all")
	ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(workers))
	for _, sv := range s.Servers {
		id := strconv.Itoa(sv.ID)
		for _, g := range []struct {
			d *prometheus.Desc
			v *int64
		}{{descZnodes, sv.Znodes}, {descWatches, sv.Watches}, {descEphemerals, sv.Ephemerals}} {
			if g.v != nil {
				ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, float64(*g.v), id)
			}
		}
		if sv.DataBytes >= 0 {
			ch <- prometheus.MustNewConstMetric(descData, prometheus.GaugeValue, float64(sv.DataBytes), id)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
