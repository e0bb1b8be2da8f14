package compare

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/report/runview"
)

// view is what the template shows.
type view struct {
	A, B        column
	Config      []row
	ConfigSame  int
	Checkers    []checkerRow
	Violations  []row
	Figures     []row
	Timelines   []timelineRow
	GeneratedAt string
}

// column is one run's heading.
type column struct {
	Label, Name, Path, Start, Verdict, Class string
	Completion                               string
	Complete                                 bool
	Reasons                                  []string
	Report, Folder                           string
}

// row is one line of a side-by-side table; Differ highlights it.
type row struct {
	What, A, B string
	Differ     bool
}

// checkerRow is one checker's verdict in each run.
type checkerRow struct {
	Name   string
	A, B   verdictCell
	Differ bool
}

type verdictCell struct {
	Valid, Class, Note string
}

// timelineRow is one kind of figure, drawn for each run.
type timelineRow struct {
	Title string
	A, B  Figure
}

func build(a, b Side) view {
	v := view{A: heading("A", a), B: heading("B", b), GeneratedAt: time.Now().UTC().Format(time.RFC3339)}
	v.Config, v.ConfigSame = configRows(a.Run.Config, b.Run.Config)
	v.Checkers = checkerRows(a.Run.Results, b.Run.Results)
	v.Violations = violationRows(a.Run.Results, b.Run.Results)
	v.Figures = figureRows(a.Run, b.Run)
	v.Timelines = timelineRows(Timeline(a, "A"), Timeline(b, "B"))
	return v
}

func heading(label string, s Side) column {
	r := s.Run
	c := column{Label: label, Name: r.Config.Name, Path: r.Path, Verdict: strings.ToUpper(r.Results.Valid.Word()),
		Class: r.Results.Valid.Word(), Reasons: r.Results.Reasons, Report: s.ReportHref(), Folder: s.FolderHref()}
	if c.Name == "" {
		c.Name = "(no test.json)"
	}
	if !r.Config.Start.IsZero() {
		c.Start = r.Config.Start.UTC().Format(time.RFC3339)
	}
	if cp := r.Results.Completion; cp != nil {
		c.Complete = cp.Completed
		c.Completion = "complete: workload ran " + dur(cp.ReachedNS) + " of " + dur(cp.TimeLimitNS) + ", final phase ran"
		switch {
		case cp.StoppedAtFirst:
			c.Completion = cp.Why
		case !cp.Completed:
			c.Completion = "incomplete: " + cp.Why
		}
	} else {
		c.Completion = "completeness not recorded"
	}
	return c
}

func dur(ns int64) string { return time.Duration(ns).Round(100 * time.Millisecond).String() }

// shownKeys are the settings every comparison shows, differing or not,
// in this order: what defines a chaos run.
var shownKeys = []string{"workload", "recipe", "nemesis", "fencing", "time_limit", "session_timeout", "pause_for",
	"nemesis_interval", "workers", "keys", "hold", "seed", "cluster", "net", "gate"}

// runOwnKeys differ between any two runs and say nothing about what was
// tested (the name is in the heading).
var runOwnKeys = map[string]bool{"name": true, "run_id": true, "start": true, "start_wall_ns": true, "controller_pid": true,
	"executable": true, "args": true, "results_dir": true, "host": true, "user": true, "go_version": true}

// configRows lists the settings shown always, then every other setting
// that differs; same counts the others, equal in both.
func configRows(a, b runview.Config) (rows []row, same int) {
	add := func(k string) {
		va, oka := a.Value(k)
		vb, okb := b.Value(k)
		if !oka && !okb {
			return
		}
		rows = append(rows, row{What: k, A: orDash(va, oka), B: orDash(vb, okb), Differ: va != vb || oka != okb})
	}
	shown := map[string]bool{}
	for _, k := range shownKeys {
		shown[k] = true
		add(k)
	}
	for _, k := range unionKeys(a.All, b.All) {
		if shown[k] || runOwnKeys[k] {
			continue
		}
		va, oka := a.Value(k)
		vb, okb := b.Value(k)
		if va == vb && oka == okb {
			same++
			continue
		}
		add(k)
	}
	return rows, same
}

func orDash(s string, ok bool) string {
	if !ok {
		return "—"
	}
	return s
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// checkerNames is every checker of either run, in the order they ran.
func checkerNames(a, b checker.Results) []string {
	seen := map[string]bool{}
	var names []string
	for _, order := range [][]string{a.Order, b.Order} {
		for _, n := range order {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

func checkerRows(a, b checker.Results) []checkerRow {
	var rows []checkerRow
	for _, n := range checkerNames(a, b) {
		ca, cb := cell(a, n), cell(b, n)
		rows = append(rows, checkerRow{Name: n, A: ca, B: cb, Differ: ca.Valid != cb.Valid})
	}
	return rows
}

func cell(res checker.Results, name string) verdictCell {
	r, ok := res.Checkers[name]
	if !ok {
		return verdictCell{Valid: "not run", Class: "none"}
	}
	c := verdictCell{Valid: r.Valid.String(), Class: r.Valid.Word(), Note: r.Error}
	if r.Gating {
		c.Valid += " (gating)"
	}
	return c
}

// violationRows lists, per checker, every kind of violation either run
// has, with its count in each.
func violationRows(a, b checker.Results) []row {
	var rows []row
	for _, n := range checkerNames(a, b) {
		ta, tb := checker.Tally(a.Checkers[n]), checker.Tally(b.Checkers[n])
		kinds := map[string]bool{}
		for k := range ta {
			kinds[k] = true
		}
		for k := range tb {
			kinds[k] = true
		}
		sorted := make([]string, 0, len(kinds))
		for k := range kinds {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			rows = append(rows, row{What: n + ": " + k, A: fmt.Sprint(ta[k]), B: fmt.Sprint(tb[k]), Differ: ta[k] != tb[k]})
		}
	}
	return rows
}

// figureRows are the key figures of each run, from the stats checker's
// details and the checkers' first violations.
func figureRows(a, b *runview.Run) []row {
	fa, fb := keyFigures(a), keyFigures(b)
	rows := make([]row, len(fa))
	for i := range fa {
		rows[i] = row{What: fa[i].what, A: fa[i].value, B: fb[i].value, Differ: fa[i].differ && fa[i].value != fb[i].value}
	}
	return rows
}

type figure struct {
	what, value string
	// differ marks a figure whose difference is news (the first
	// violation); throughput and latency always differ a little.
	differ bool
}

func keyFigures(r *runview.Run) []figure {
	var d *stats.StatsDetails
	if res, ok := r.Results.Checkers[stats.Name]; ok && res.Details != nil {
		var sd stats.StatsDetails
		if res.DecodeDetails(&sd) == nil {
			d = &sd
		}
	}
	num := func(f func(*stats.StatsDetails) string) string {
		if d == nil {
			return "—"
		}
		return f(d)
	}
	return []figure{
		{what: "workload ran", value: r.Duration().Round(100 * time.Millisecond).String()},
		{what: "operations completed", value: num(func(d *stats.StatsDetails) string { return fmt.Sprint(completed(d.Ops)) })},
		{what: "acquisitions (ok)", value: num(func(d *stats.StatsDetails) string { return fmt.Sprint(d.Ops["acquire"].OK) })},
		{what: "acquisitions per second", value: num(func(d *stats.StatsDetails) string { return fmt.Sprintf("%.2f", d.AcquiresPerS) })},
		{what: "lock wait p50 / p99 (ms)", value: num(func(d *stats.StatsDetails) string { return pair(d.LockWaitMS) })},
		{what: "hold p50 / p99 (ms)", value: num(func(d *stats.StatsDetails) string { return pair(d.HoldMS) })},
		{what: "token rejections (register)", value: num(func(d *stats.StatsDetails) string { return fmt.Sprint(d.TokenRejections) })},
		{what: "timeouts", value: num(func(d *stats.StatsDetails) string { return fmt.Sprint(d.Timeouts) })},
		{what: "locks lost", value: num(func(d *stats.StatsDetails) string { return fmt.Sprint(d.Lost) })},
		{what: "time to first violation", value: firstViolation(r.Results), differ: true},
	}
}

func completed(ops map[string]stats.OpCounts) int {
	n := 0
	for _, c := range ops {
		n += c.OK + c.Fail + c.Info
	}
	return n
}

func pair(p stats.Percentiles) string {
	if p.Count == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f / %.1f", p.P50, p.P99)
}

// firstViolation is the earliest first violation of any checker that
// found the run invalid, and which checker found it.
func firstViolation(res checker.Results) string {
	var first *time.Duration
	who := ""
	for _, n := range res.Names() {
		r := res.Checkers[n]
		if r.Valid != checker.Invalid {
			continue
		}
		if d := checker.FirstViolation(r); d != nil && (first == nil || *d < *first) {
			first, who = d, n
		}
	}
	if first == nil {
		return "none"
	}
	return fmt.Sprintf("%.3f s (%s)", first.Seconds(), who)
}

func timelineRows(a, b []Figure) []timelineRow {
	var rows []timelineRow
	for i := 0; i < max(len(a), len(b)); i++ {
		var r timelineRow
		if i < len(a) {
			r.A, r.Title = a[i], a[i].Title
		}
		if i < len(b) {
			r.B = b[i]
			if r.Title == "" {
				r.Title = b[i].Title
			}
		}
		rows = append(rows, r)
	}
	return rows
}
