package report

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/observe/resources"
	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/report/plots"
)

// The soak section (chaos soak): what the run did per hour and its
// resource use over time, so a leak or a growing ensemble shows. It comes
// after the figures: the verdict and its evidence first, then the trends.
const soakSource = `{{with .Soak}}<section id="{{.ID}}"><h2>Soak</h2>
{{if .Warning}}<p class="violation"><strong>{{.Warning}}</strong></p>{{end}}
<table>
<tr><th>figure</th><th>value</th><th>from</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Value}}</td><td>{{.From}}</td></tr>
{{end}}</table>
{{range .Figures}}{{template "figure" .}}
{{end}}</section>{{end}}`

var _ = template.Must(pageTmpl.New("soak").Parse(soakSource))

// soakView is the soak section; nil for a run without resource samples.
type soakView struct {
	ID      string
	Warning string
	Rows    []metricRow
	Figures []figureView
}

// LeakBound is how much the controller's RSS may grow between minute 5
// and the end before the page says so: the project's target is a controller whose
// memory stays within 10% over a soak.
const LeakBound = 0.10

// leakFrom and leakWindow are where TrendOf looks: minute 5 (start-up
// and the first faults are over) against the last minute.
const (
	leakFrom   = 5 * time.Minute
	leakWindow = time.Minute
)

func soak(in Page) *soakView {
	if len(in.Resources) == 0 && in.ResourcesNote == "" {
		return nil
	}
	sv := &soakView{ID: anchor.Soak}
	hours := workloadSpan(in).Hours()
	ops, faults := soakCounts(in.History)
	perHour := func(n int) string {
		if hours <= 0 {
			return fmt.Sprint(n)
		}
		return fmt.Sprintf("%d (%.1f per hour)", n, float64(n)/hours)
	}
	sv.Rows = append(sv.Rows,
		metricRow{"workload", time.Duration(hours * float64(time.Hour)).Round(time.Second).String(), "results.json's completion (else the history's last event)"},
		metricRow{"operations", perHour(ops), "history: the clients' completions (ok, fail, info)"},
		metricRow{"faults", perHour(faults), "history: fault starts that did something"},
		violationsRow(in.Results, perHour))
	if in.ResourcesNote != "" {
		sv.Rows = append(sv.Rows, metricRow{"resources", notRecorded, in.ResourcesNote})
	}
	if len(in.Resources) > 0 {
		sv.Rows = append(sv.Rows, rssRow(sv, in.Resources), heapRow(in.Resources), dataRow(in.Resources))
		sv.Figures = resourceFigures(in)
	}
	return sv
}

// workloadSpan is how long the workload ran. A resumed soak's
// completion holds its last segment only, so its span is the history's,
// gaps included (rates per hour are then a little low, never inflated).
func workloadSpan(in Page) time.Duration {
	if c := in.Results.Completion; c != nil && c.ReachedNS > 0 && c.Segments <= 1 {
		return time.Duration(c.ReachedNS)
	}
	var end int64
	for _, e := range in.History {
		end = max(end, e.Time)
	}
	return time.Duration(end)
}

// soakCounts are the clients' completions and the faults injected.
func soakCounts(h []history.Event) (ops, faults int) {
	for _, e := range h {
		switch {
		case e.Type == history.Invoke:
		case e.Process == history.Nemesis:
			if history.IsFaultStart(e.F) && e.Type != history.Fail {
				faults++
			}
		case !checker.IsInstant(e.F):
			ops++
		}
	}
	return ops, faults
}

// violationsRow is the double-writer's count per hour and the other
// checkers that found the run invalid.
func violationsRow(res checker.Results, perHour func(int) string) metricRow {
	r := metricRow{Name: "violations", From: "results.json: the double-writer's exact count; other checkers by verdict"}
	n, counted := 0, false
	if d, ok := decode[fence.DoubleWriterDetails](res, fence.NameDoubleWriter); ok {
		counted = true
		for _, c := range d.ViolationCounts {
			n += c
		}
	}
	var others []string
	for _, name := range res.Names() {
		if name != fence.NameDoubleWriter && res.Checkers[name].Valid == checker.Invalid {
			others = append(others, name)
		}
	}
	switch {
	case counted:
		r.Value = "double-writer " + perHour(n)
	default:
		r.Value = "no double-writer result"
	}
	if len(others) > 0 {
		r.Value += "; other checkers that found violations: " + strings.Join(others, ", ")
	}
	return r
}

// rssRow judges the controller's RSS between minute 5 and the end, and
// sets the section's warning when it grew more than LeakBound.
func rssRow(sv *soakView, samples []resources.Sample) metricRow {
	r := metricRow{Name: "controller RSS, minute 5 → end",
		From: fmt.Sprintf("resources.jsonl: the mean of the samples in the minute from %s against the last minute's", leakFrom)}
	tr := resources.TrendOf(samples, resources.ControllerRSS, leakFrom, leakWindow)
	if !tr.Judged {
		r.Value = "not judged: " + tr.Why
		return r
	}
	r.Value = fmt.Sprintf("%.1f MiB → %.1f MiB (%+.1f%%)", tr.From/(1<<20), tr.To/(1<<20), 100*tr.Growth)
	if tr.Growth > LeakBound {
		sv.Warning = fmt.Sprintf("The controller's RSS grew %.1f%% between minute 5 and the end (more than %.0f%%): a leak, or memory that grows with the run.",
			100*tr.Growth, 100*LeakBound)
	}
	return r
}

// heapRow is the controller's live Go heap from minute 5 to the end:
// what the controller keeps, beside the RSS the runtime holds.
func heapRow(samples []resources.Sample) metricRow {
	r := metricRow{Name: "controller live heap, minute 5 → end", From: "resources.jsonl: the Go runtime's live heap after its last collection, means as for the RSS"}
	tr := resources.TrendOf(samples, resources.ControllerHeap, leakFrom, leakWindow)
	if !tr.Judged {
		r.Value = "not judged: " + tr.Why
		return r
	}
	r.Value = fmt.Sprintf("%.1f MiB → %.1f MiB (%+.1f%%)", tr.From/(1<<20), tr.To/(1<<20), 100*tr.Growth)
	return r
}

// dataRow is the servers' data directories: first, last, growth per hour.
func dataRow(samples []resources.Sample) metricRow {
	r := metricRow{Name: "data directories (all servers)", From: "resources.jsonl: snapshots and transaction logs; autopurge keeps 3 snapshots, hourly"}
	first, last := -1.0, -1.0
	for _, s := range samples {
		if v, ok := resources.DataBytes(s); ok {
			if first < 0 {
				first = v
			}
			last = v
		}
	}
	if first < 0 {
		r.Value = notRecorded
		return r
	}
	r.Value = fmt.Sprintf("%.1f MiB → %.1f MiB", first/(1<<20), last/(1<<20))
	if rate, ok := resources.PerHour(samples, resources.DataBytes); ok {
		r.Value += fmt.Sprintf(" (%+.1f MiB per hour)", rate/(1<<20))
	}
	return r
}

// resourceFigures draws the resource figures on the run's clock.
func resourceFigures(in Page) []figureView {
	v := lockview.Of(in.History)
	var out []figureView
	for _, k := range []struct {
		title string
		kind  plots.ResourceKind
	}{
		{"Controller RSS", plots.ControllerRSS}, {"ZooKeeper JVM RSS", plots.JVMRSS}, {"Open files", plots.OpenFiles},
		{"Znodes, watches, ephemerals", plots.ServerCounts}, {"Data directory size", plots.DataDirs},
	} {
		f := figureView{Title: k.title}
		draw := func(v lockview.View) (plots.Figure, error) { return plots.Resources(v, in.Resources, k.kind) }
		f.SVG, f.Caption, f.Note = DrawFigure(draw, v)
		out = append(out, f)
	}
	return out
}
