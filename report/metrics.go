package report

import (
	"fmt"
	"html/template"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/report/plots"
)

// The metrics section: the numbers a lock service must be watched by
// (docs/background.md#what-the-metrics-mean), each with where it comes from, and "not
// recorded" with the reason when this run cannot tell.
const metricsSource = `<h2 id="{{.Metrics.ID}}">Lock metrics</h2>
{{with .Metrics}}{{with .Waiters}}{{template "figure" .}}{{end}}
<table>
<tr><th>metric</th><th>value</th><th>from</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Value}}</td><td>{{.From}}</td></tr>
{{end}}</table>{{end}}`

var _ = template.Must(pageTmpl.New("metrics").Parse(metricsSource))

// metricsView is the metrics section.
type metricsView struct {
	ID      string
	Waiters *figureView
	Rows    []metricRow
}

// metricRow is one metric: its value, and where it comes from (or why it
// is not recorded).
type metricRow struct{ Name, Value, From string }

// notRecorded is a metric's value when this run cannot tell it.
const notRecorded = "not recorded"

func metrics(in Page) metricsView {
	mv := metricsView{ID: anchor.Metrics}
	st, hasStats := decode[stats.StatsDetails](in.Results, stats.Name)
	noStats := metricRow{Value: notRecorded, From: "no readable stats result in results.json"}
	mv.Waiters = waitersFigure(in)
	mv.Rows = append(mv.Rows, waitersRow(in))
	if hasStats {
		mv.Rows = append(mv.Rows,
			metricRow{"lock wait", percentiles(st.LockWaitMS), "stats: ok acquires (or campaigns), invocation to answer"},
			metricRow{"hold time", percentiles(st.HoldMS), "stats: acquire ok to the same process's release of the key"},
			timeoutRow(st),
			metricRow{"session Disconnected", fmt.Sprint(st.Sessions["disconnected"]), "stats: session events the workers reported"},
			metricRow{"session Expired", fmt.Sprint(st.Sessions["expired"]), "stats: session events the workers reported"})
	} else {
		for _, n := range []string{"lock wait", "hold time", "timeout rate", "session Disconnected", "session Expired"} {
			r := noStats
			r.Name = n
			mv.Rows = append(mv.Rows, r)
		}
	}
	mv.Rows = append(mv.Rows, churnRows(in)...)
	mv.Rows = append(mv.Rows, metricRow{"ConnectionLoss", fmt.Sprint(ConnectionLosses(in.History)),
		"history: completions whose error names a lost connection; the recipes retry a lost connection themselves, so only those that reached an answer count"})
	mv.Rows = append(mv.Rows, watchRows(in)...)
	if hasStats {
		mv.Rows = append(mv.Rows, metricRow{"token rejections", rejections(st), "stats: the register's apply log (fence refusals)"})
	} else {
		r := noStats
		r.Name = "token rejections"
		mv.Rows = append(mv.Rows, r)
	}
	return mv
}

func percentiles(p stats.Percentiles) string {
	if p.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (%d)", p.P50, p.P95, p.P99, p.Max, p.Count)
}

// timeoutRow is the timeouts against the queue's answers (acquire and
// campaign), as stats counts them.
func timeoutRow(st stats.StatsDetails) metricRow {
	var answers int
	for _, f := range []string{history.FAcquire, history.FCampaign} {
		c := st.Ops[f]
		answers += c.OK + c.Fail + c.Info
	}
	r := metricRow{Name: "timeout rate", From: "stats: completions whose error mentions a timeout (acquire timeouts and operations the controller gave up on), against the acquire (or campaign) answers"}
	if answers == 0 {
		r.Value = fmt.Sprintf("%d timeouts, no acquire answer", st.Timeouts)
		return r
	}
	r.Value = fmt.Sprintf("%d of %d (%.1f%%)", st.Timeouts, answers, 100*float64(st.Timeouts)/float64(answers))
	return r
}

func rejections(st stats.StatsDetails) string {
	s := fmt.Sprint(st.TokenRejections)
	if len(st.Register.ByReason) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(st.Register.ByReason)) {
			parts = append(parts, fmt.Sprintf("%s: %d", k, st.Register.ByReason[k]))
		}
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}

// waitersFigure draws the waiters per lock path; nil without samples
// (the row says why).
func waitersFigure(in Page) *figureView {
	if len(in.Monitor) == 0 || len(in.History) == 0 {
		return nil
	}
	f := &figureView{Title: "Waiters per lock path"}
	waiters := func(v lockview.View) (plots.Figure, error) { return plots.Waiters(v, in.Monitor) }
	f.SVG, f.Caption, f.Note = DrawFigure(waiters, lockview.Of(in.History))
	return f
}

// monitorMissing is why the monitor's metrics are not recorded.
func monitorMissing(in Page) string {
	if in.MonitorNote != "" {
		return in.MonitorNote
	}
	return "monitor.jsonl holds no sample"
}

func waitersRow(in Page) metricRow {
	r := metricRow{Name: "waiters per lock path"}
	if len(in.Monitor) == 0 {
		r.Value, r.From = notRecorded, monitorMissing(in)
		return r
	}
	type acc struct{ n, sum, max int }
	var order []string
	by := map[string]*acc{}
	for _, s := range in.Monitor {
		for _, d := range s.Dirs {
			if d.Error != "" {
				continue
			}
			a := by[d.Path]
			if a == nil {
				a = &acc{}
				by[d.Path] = a
				order = append(order, d.Path)
			}
			a.n++
			a.sum += d.Waiters()
			a.max = max(a.max, d.Waiters())
		}
	}
	var parts []string
	for _, p := range order {
		a := by[p]
		parts = append(parts, fmt.Sprintf("%s: max %d, mean %.2f", path.Base(p), a.max, float64(a.sum)/float64(a.n)))
	}
	r.Value = strings.Join(parts, "; ")
	r.From = fmt.Sprintf("monitor: ls of each lock directory at %d samples (children behind the first); a queue that came and went between samples is not seen", len(in.Monitor))
	return r
}

// churnRows are the nodes created and deleted per lock directory.
func churnRows(in Page) []metricRow {
	if len(in.Monitor) == 0 {
		return []metricRow{{"nodes created / deleted", notRecorded, monitorMissing(in)}}
	}
	var parts []string
	var creates, deletes int64
	var from, to int64 = -1, 0
	resets := 0
	for _, c := range monitor.Churns(in.Monitor) {
		parts = append(parts, fmt.Sprintf("%s: %d / %d", path.Base(c.Path), c.Creates, c.Deletes))
		creates += c.Creates
		deletes += c.Deletes
		resets += c.Resets
		if from < 0 || c.FromNS < from {
			from = c.FromNS
		}
		to = max(to, c.ToNS)
	}
	if len(parts) == 0 {
		return []metricRow{{"nodes created / deleted", notRecorded, "no monitor sample could read a lock directory"}}
	}
	from = max(from, 0)
	src := fmt.Sprintf("monitor: each lock directory's stat between its first and last sample (%s to %s); its cversion counts every child created or deleted, so nodes that came and went between samples count too",
		checker.Seconds(from), checker.Seconds(to))
	if resets > 0 {
		src += fmt.Sprintf("; %d spans left out where a directory was re-created", resets)
	}
	return []metricRow{{"nodes created / deleted", fmt.Sprintf("%d / %d (%s)", creates, deletes, strings.Join(parts, "; ")), src}}
}

// watchRows are the predecessor watch triggers, from the herd checker's
// own count of the wake-ups the workers reported.
func watchRows(in Page) []metricRow {
	h, ok := decode[lock.HerdDetails](in.Results, lock.NameHerd)
	if !ok || h.Acquires == 0 {
		why := "no readable herd result in results.json"
		if ok {
			why = "herd: " + h.Reason
		}
		return []metricRow{
			{"predecessor watch triggers", notRecorded, why},
			{"re-checks", notRecorded, why}}
	}
	v := fmt.Sprintf("%d over %d acquire answers (%.2f each)", h.Wakeups, h.Acquires, float64(h.Wakeups)/float64(h.Acquires))
	return []metricRow{
		{"predecessor watch triggers", v, "herd: the wake-ups each acquire answer reported (docs/worker-protocol.md, \"Wake-ups\")"},
		{"re-checks", fmt.Sprintf("%d after a watch; without a notification: %s", h.Wakeups, notRecorded),
			"herd: every wake-up counted is followed by a re-check of the queue; the worker protocol does not report re-checks made without a notification (a predecessor found already gone, a retry)"},
	}
}

// connectionLossWords are how a lost connection reads in an error:
// ZooKeeper's ConnectionLoss (Java clients), go-zookeeper's "connection
// closed" (its ConnectionLoss), and plain words.
var connectionLossWords = []string{"connectionloss", "connection loss", "connection closed", "connection lost"}

// ConnectionLosses counts the worker completions whose error names a lost
// connection.
func ConnectionLosses(h []history.Event) int {
	n := 0
	for _, e := range h {
		if e.Type == history.Invoke || e.Process == history.Nemesis || e.Error == "" {
			continue
		}
		low := strings.ToLower(e.Error)
		for _, w := range connectionLossWords {
			if strings.Contains(low, w) {
				n++
				break
			}
		}
	}
	return n
}
