// Package report writes report.html: one self-contained page (no scripts,
// no external assets) that a user can open from a CI artifact or mail to a
// colleague and still read in a year. Everything on it comes from files
// beside it, which it links, so the page is a summary, never the only copy
// of the evidence.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/linear"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stats"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/observe/monitor"
	"github.com/zkchaos/zkchaos/observe/resources"
	"github.com/zkchaos/zkchaos/report/anchor"
	"github.com/zkchaos/zkchaos/report/plots"
	"github.com/zkchaos/zkchaos/report/runview"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Link is a relative href to a file of the run, so the results folder can
// be moved or archived without breaking the page.
type Link struct {
	Name string
	Href string
}

// rawFiles are the files a run folder may hold, in the order a reader
// wants them.
var rawFiles = []Link{
	{"history", store.HistoryFile},
	{"register apply log", store.ApplyLogFile},
	{"configuration", store.TestFile},
	{"fault schedule", store.ScheduleFile},
	{"results", store.ResultsFile},
	{"status", store.StatusFile},
	{"runbook monitor samples", store.MonitorFile},
	{"controller log", store.LogFile},
	{"register log", store.RegisterLog},
	{"janitor log", store.JanitorLog},
	{"worker logs", store.WorkersDir + "/"},
	{"server logs", store.ZKDir + "/"},
}

// DefaultLinks are the raw files of the run folder dir that exist, so no
// link of the page leads nowhere (a killed run lacks some; a docker run
// has no local server folder).
func DefaultLinks(dir string) []Link {
	var out []Link
	for _, l := range rawFiles {
		if _, err := os.Stat(filepath.Join(dir, strings.TrimSuffix(l.Href, "/"))); err == nil {
			out = append(out, l)
		}
	}
	return out
}

// Page is what the report shows.
type Page struct {
	// Name is the test name; Start is when the run started; Dir is the
	// run folder, shown so a printed or mailed report can be traced back.
	Name  string
	Dir   string
	Start time.Time
	// Config is the raw test.json; it is summarised key by key when it is
	// a JSON object and shown verbatim otherwise. ConfigMap, when set, is
	// used instead (for callers that have the configuration in hand).
	Config    []byte
	ConfigMap map[string]any
	Results   checker.Results
	// Nemesis holds the nemesis events of the history (invocations and
	// completions); other events are ignored, so passing the whole
	// history is fine.
	Nemesis []history.Event
	// History, when set, is the whole history, from which the figures
	// are drawn (package plots); without it the page has none.
	History []history.Event
	// HistoryTruncated says the history's last line was cut off (the run
	// was killed mid-write) and dropped; the reader should know.
	HistoryTruncated bool
	// ApplyLog is the register's apply log (register.jsonl), where the
	// timeline draws each write; StartWall (Unix ns, from test.json) puts
	// its wall clock on the run's clock. Either may be empty.
	ApplyLog  []register.Entry
	StartWall int64
	// Monitor is the runbook monitor's samples (monitor.jsonl), for the
	// runbook and metrics sections; MonitorNote, when set, says why there
	// are none ("Not recorded: …").
	Monitor     []monitor.Sample
	MonitorNote string
	// Resources is a soak's resource samples (resources.jsonl), for the
	// soak section; ResourcesNote says why they could not be read. A run
	// with neither has no soak section.
	Resources     []resources.Sample
	ResourcesNote string
	// Links to the raw files; nil means DefaultLinks.
	Links []Link
}

// pageSource lives in the code rather than beside it so the package is
// one file to vendor; html/template escapes every value it inserts.
const pageSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>zkchaos: {{.Name}} {{.Verdict}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { margin-bottom: 0.2em; }
.meta { color: #666; }
.verdict { font-size: 3em; font-weight: bold; padding: 0.3em 0.6em; display: inline-block; border-radius: 0.2em; color: #fff; margin: 0.5em 0; }
.verdict.valid { background: #2e7d32; }
.verdict.invalid { background: #c62828; }
.verdict.unknown { background: #ef8f00; }
td.valid { color: #2e7d32; font-weight: bold; }
td.invalid { color: #c62828; font-weight: bold; }
td.unknown { color: #ef8f00; font-weight: bold; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.violation { border-left: 4px solid #c62828; padding: 0.3em 0.8em; margin: 0.6em 0; background: #fff5f5; }
code, pre { font-family: ui-monospace, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.raw { color: #777; font-size: 0.85em; }
figure.plot { margin: 0.5em 0 1.5em; max-width: 1200px; }
figure.plot svg { display: block; max-width: 100%; height: auto; }
figure.plot figcaption { color: #444; margin-top: 0.2em; }
</style>
</head>
<body>
<h1>{{.Name}}</h1>
<p class="meta">run started {{if .Time}}{{.Time}}{{else}}(unknown){{end}}; report written {{.GeneratedAt}}; gate: {{.Gate}}{{if .Dir}}; folder <code>{{.Dir}}</code>{{end}}</p>
{{if .Truncated}}<p><strong>Note:</strong> the history's last line was cut off (the run was killed mid-write) and was dropped before checking.</p>{{end}}
<div class="verdict {{.VerdictClass}}" id="verdict">{{.Verdict}}</div>
{{with .Completion}}<p id="completion">{{if and .Completed (gt .Segments 1)}}Run complete in <strong>{{.Segments}} segments</strong>: a controller died and the soak was resumed (chaos soak {{setting "Resume"}}; test.json lists the segments), so the run has a gap; the operations left open at each gap were completed as info. The last segment's workload ran {{.Reached}} of {{.Limit}}, stopped by its time limit, and the final phase ran.{{else if .Completed}}Run complete: the workload ran {{.Reached}} of {{.Limit}}, stopped by its time limit, and the final phase ran.{{else if .StoppedAtFirst}}<strong>Run stopped at its first violation</strong>: the online check of the apply log found one and the run was asked to stop there ({{setting "StopAtFirst"}}): the workload ran {{.Reached}} of {{.Limit}}, then the final phase ran. The verdict is the full check's: the violation makes it invalid; had the full check found none, it would be unknown, never valid.{{else}}<strong>Run incomplete</strong>: {{.Why}}. Phase reached: {{.Phase}}; workload {{.Reached}} of {{.Limit}}; final phase {{if .FinalPhase}}ran{{else}}did not run{{end}}. Finding no violation in part of a run proves nothing about the rest, so this run cannot be valid.{{end}}</p>{{end}}
{{if .Reasons}}<ul>{{range .Reasons}}<li>{{.}}</li>{{end}}</ul>{{end}}

<nav id="contents"><strong>Contents:</strong> <a href="#checkers">checkers</a>{{with .Timeline}} &middot; <a href="#{{.ID}}">timeline</a>{{end}} &middot; <a href="#{{.StoriesID}}">stories</a> &middot; <a href="#{{.Runbook.ID}}">runbook evidence</a>{{if .Figures}} &middot; <a href="#{{.FiguresID}}">figures</a>{{end}}{{with .Soak}} &middot; <a href="#{{.ID}}">soak</a>{{end}} &middot; <a href="#double-writes">double writes</a> &middot; <a href="#linearizability">linearizability</a> &middot; <a href="#operations">operations</a> &middot; <a href="#{{.Metrics.ID}}">lock metrics</a> &middot; <a href="#nemesis">nemesis</a> &middot; <a href="#configuration">configuration</a> &middot; <a href="#raw-files">raw files</a></nav>

{{template "checkers" .}}
{{template "timeline" .}}
{{template "stories" .}}
{{template "runbook" .}}
{{template "figures" .}}
{{template "soak" .}}
{{template "doublewrites" .}}
{{template "linear" .}}
{{template "operations" .}}
{{template "metrics" .}}
{{template "nemesis" .}}
{{template "configuration" .}}
{{template "raw" .}}
</body>
</html>
{{define "checkers"}}<h2 id="checkers">Checkers</h2>
<table>
<tr><th>checker</th><th>valid</th><th>gating</th><th>elapsed (ms)</th><th>error</th></tr>
{{range .Checkers}}<tr><td>{{.Name}}</td><td class="{{.Class}}">{{.Valid}}</td><td>{{if .Gating}}yes{{else}}no{{end}}</td><td class="n">{{ms .ElapsedMS}}</td><td>{{.Error}}</td></tr>
{{end}}</table>{{end}}
{{define "doublewrites"}}<h2 id="double-writes">Double writes</h2>
{{with .DW}}
<p>{{$.DWList.Kept}} violations in {{template "fileref" $.Refs.Results}}{{if .ViolationsOmitted}} and {{.ViolationsOmitted}} more that the checker counted but did not keep{{end}};
by kind: {{range $k, $n := .ViolationCounts}}{{$k}} {{$n}}; {{end}}
{{.AcceptedWrites}} accepted writes, {{.TokenRejections}} token rejections in {{.Entries}} apply-log entries.</p>
{{if .FirstViolationSeq}}<p>First violation at apply-log seq {{.FirstViolationSeq}}{{if $.FirstAfterSec}}, {{$.FirstAfterSec}} after the start{{end}}.</p>{{end}}
{{if .Reason}}<p><strong>Undecided:</strong> {{.Reason}}</p>{{end}}
{{with $.DWList}}{{if .More}}<p><strong>Listed below: {{len .Shown}} of the {{.Kept}}</strong>, the first of each kind and then the earliest; {{.More}} more are in {{template "fileref" $.Refs.Results}} (<code>{{.Path}}</code>), by their index.</p>{{end}}{{end}}
{{range $.DWList.Shown}}<div class="violation">
<p>#{{.Index}} <strong>{{.Kind}}</strong> on key <code>{{.Key}}</code>: tokens {{join .Tokens}}; processes {{joinInts .Processes}}; seqs {{join .Seqs}}; values {{join .Values}}{{if .Expected}}; expected {{.Expected}}, actual {{.Actual}}{{end}}</p>
<p>{{.Message}}</p>
</div>
{{else}}<p>None found.</p>
{{end}}
{{else}}<p>No double-writer result{{if .DWError}}: {{.DWError}}{{end}}.</p>
{{end}}{{end}}
{{define "linear"}}<h2 id="linearizability">Linearizability</h2>
{{range .Linear}}<h3>{{.Name}}: <span class="{{.Class}}">{{.Valid}}</span></h3>
{{if .Error}}<p>{{.Error}}</p>{{end}}
{{with .D}}<p>Model: {{.Model}}. {{.Partitions}} keys, {{.Operations}} operations ({{.InfoOperations}} unknown, returning at infinity){{if .BudgetMS}}; budget {{ms .BudgetMS}} ms{{end}}.</p>
{{if .Note}}<p><em>{{.Note}}</em></p>{{end}}
{{if .Segments}}<p>Checked in {{.Segments}} segments (each key cut where none of its operations was open, each segment checked from the state the previous one ended in: checker/linear/segment.go){{if .UncutKeys}}; keys that could not be cut: {{joinStrings .UncutKeys}}{{end}}.</p>{{end}}
<table>
<tr><th>key</th><th>valid</th><th>operations</th><th>info</th><th>max concurrency</th><th>segments</th><th>largest segment</th><th>elapsed (ms)</th><th>visualisation</th></tr>
{{range $.KeysOf .}}<tr><td>{{.Key}}</td><td class="{{.Class}}">{{.R.Valid}}</td><td class="n">{{.R.Operations}}</td><td class="n">{{.R.Info}}</td><td class="n">{{.R.MaxConcurrency}}</td><td class="n">{{.R.Segments}}</td><td class="n">{{.R.LargestSegment}}</td><td class="n">{{ms .R.ElapsedMS}}</td><td>{{if .R.Visualization}}<a href="{{.R.Visualization}}">{{.R.Visualization}}</a>{{end}}{{.R.VisualizationError}}{{.R.Error}}{{with .R.Uncut}} Not cut: {{.}}{{end}}</td></tr>
{{end}}</table>
{{end}}{{if .DecodeError}}<p>Evidence unreadable: {{.DecodeError}}</p>{{end}}
{{else}}<p>No linearizability results.</p>
{{end}}{{end}}
{{define "operations"}}<h2 id="operations">Operations</h2>
{{with .Stats}}
<table>
<tr><th>f</th><th>ok</th><th>fail</th><th>info</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th></tr>
{{range $.Ops}}<tr><td>{{.F}}</td><td class="n">{{.C.OK}}</td><td class="n">{{.C.Fail}}</td><td class="n">{{.C.Info}}</td>{{if .Latency.Count}}<td class="n">{{ms .Latency.P50}}</td><td class="n">{{ms .Latency.P95}}</td><td class="n">{{ms .Latency.P99}}</td><td class="n">{{ms .Latency.Max}}</td>{{else}}<td colspan="4">no ok or fail completions</td>{{end}}</tr>
{{end}}</table>
<table>
<tr><th>measure</th><th>count</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th></tr>
<tr><td>lock wait (ok acquires)</td><td class="n">{{.LockWaitMS.Count}}</td><td class="n">{{ms .LockWaitMS.P50}}</td><td class="n">{{ms .LockWaitMS.P95}}</td><td class="n">{{ms .LockWaitMS.P99}}</td><td class="n">{{ms .LockWaitMS.Max}}</td></tr>
<tr><td>hold time</td><td class="n">{{.HoldMS.Count}}</td><td class="n">{{ms .HoldMS.P50}}</td><td class="n">{{ms .HoldMS.P95}}</td><td class="n">{{ms .HoldMS.P99}}</td><td class="n">{{ms .HoldMS.Max}}</td></tr>
</table>
<table>
<tr><th>duration</th><td class="n">{{f2 .DurationS}} s</td></tr>
<tr><th>acquisitions per second</th><td class="n">{{f2 .AcquiresPerS}}</td></tr>
<tr><th>processes</th><td class="n">{{.Processes}}</td></tr>
<tr><th>token rejections (register)</th><td class="n">{{.TokenRejections}}</td></tr>
<tr><th>timeouts</th><td class="n">{{.Timeouts}}</td></tr>
<tr><th>locks lost</th><td class="n">{{.Lost}}{{range $k, $n := .LostByState}} ({{$k}}: {{$n}}){{end}}</td></tr>
<tr><th>late responses</th><td class="n">{{.Late}}</td></tr>
<tr><th>session events</th><td>{{range $k, $n := .Sessions}}{{$k}}: {{$n}}; {{end}}</td></tr>
<tr><th>nemesis operations not verified</th><td class="n">{{.NemesisUnverified}}</td></tr>
<tr><th>unmatched completions</th><td class="n">{{.UnmatchedCompletions}}</td></tr>
</table>
{{else}}<p>No stats result{{if .StatsError}}: {{.StatsError}}{{end}}.</p>
{{end}}{{end}}
{{define "figures"}}{{if .Figures}}<section id="{{.FiguresID}}"><h2>Figures</h2>
{{range .Figures}}{{template "figure" .}}
{{end}}</section>{{end}}{{end}}
{{define "nemesis"}}<h2 id="nemesis">Nemesis</h2>
{{if .Nemesis.Rows}}{{if .Nemesis.More}}<p><strong>Listed below: the first {{len .Nemesis.Rows}} nemesis operations</strong>; {{.Nemesis.More}} more are in {{template "fileref" .Refs.History}} (process "nemesis"). The figures and the timeline shade every fault.</p>
{{end}}<table>
<tr><th>time (s)</th><th>f</th><th>outcome</th><th>target</th><th>pid</th><th>verified</th><th>detail</th></tr>
{{range .Nemesis.Rows}}<tr><td class="n">{{.Time}}</td><td>{{.F}}</td><td>{{.Outcome}}</td><td>{{.Target}}</td><td class="n">{{if .PID}}{{.PID}}{{end}}</td><td>{{.Verified}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{else}}<p>No nemesis operations.</p>{{end}}{{end}}
{{define "configuration"}}<h2 id="configuration">Configuration</h2>
{{if .Config}}<table>
{{range .Config}}<tr><th>{{.Key}}</th><td><code>{{.Value}}</code>{{if .Raw}} <span class="raw" title="as test.json has it">({{.Raw}})</span>{{end}}</td></tr>
{{end}}</table>
{{else if .ConfigRaw}}<pre>{{.ConfigRaw}}</pre>
{{else}}<p>Not recorded.</p>{{end}}{{end}}
{{define "raw"}}<h2 id="raw-files">Raw files</h2>
<ul>
{{range .Links}}<li><a href="{{.Href}}">{{.Name}}</a> <code>{{.Href}}</code></li>
{{end}}</ul>{{end}}
`

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"f2": func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"join": func(xs []int64) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ", ")
	},
	"joinStrings": func(xs []string) string { return strings.Join(xs, ", ") },
	// setting names a setting as the command does, when the page is
	// written (the command registers the names after this is parsed).
	"setting": setting.Name,
	"joinInts": func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ", ")
	},
}).Parse(pageSource))

// Write renders the page to path, replacing it atomically so that a
// reader never sees half a report.
func Write(path string, in Page) error {
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, build(in)); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(buf.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report %s: %w", path, werr)
	}
	return nil
}

type view struct {
	Name, Time    string
	Dir           string
	Truncated     bool
	Verdict       string
	VerdictClass  string
	Reasons       []string
	Completion    *completionView
	Gate          string
	Config        []kv
	ConfigRaw     string
	Checkers      []checkerRow
	DW            *fence.DoubleWriterDetails
	DWError       string
	Stats         *stats.StatsDetails
	StatsError    string
	Ops           []opRow
	Nemesis       nemesisList
	DWList        dwList
	Refs          fileRefs
	Figures       []figureView
	FiguresID     string
	Timeline      *timelineView
	Links         []Link
	GeneratedAt   string
	FirstAfterSec string
	Linear        []linearView
	StoriesID     string
	Stories       []storyView
	StoryCounts   []string
	Runbook       runbookView
	Metrics       metricsView
	Soak          *soakView
}

// linearView is one porcupine checker's section.
type linearView struct {
	Name, Valid, Class, Error string
	D                         *linear.LinearDetails
	DecodeError               string
}

type keyRow struct {
	Key   string
	Class string
	R     linear.PartitionResult
}

// KeysOf lists a checker's keys, failing ones first, for the template.
func (view) KeysOf(d *linear.LinearDetails) []keyRow {
	rows := make([]keyRow, 0, len(d.Keys))
	for k, r := range d.Keys {
		rows = append(rows, keyRow{Key: k, Class: validClass(r.Valid), R: r})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].R.Valid != rows[j].R.Valid {
			return rows[i].R.Valid == checker.Invalid || (rows[i].R.Valid == checker.Unknown && rows[j].R.Valid == checker.Valid)
		}
		return rows[i].Key < rows[j].Key
	})
	return rows
}

// kv is a configuration row; Raw, when set, is the value as test.json
// has it, shown beside a Value made readable.
type kv struct{ Key, Value, Raw string }

type checkerRow struct {
	Name, Valid, Class, Error string
	Gating                    bool
	ElapsedMS                 float64
}

type opRow struct {
	F       string
	C       stats.OpCounts
	Latency stats.Percentiles
}

type nemesisRow struct {
	Time     string
	F        string
	Outcome  string
	Target   string
	PID      int
	Verified string
	Detail   string
}

func validClass(v checker.Validity) string { return v.Word() }

func verdictText(v checker.Validity) string { return strings.ToUpper(v.Word()) }

// completionView is the run's completeness in words.
type completionView struct {
	checker.Completion
	Reached, Limit string
}

func build(in Page) view {
	v := view{Name: in.Name, Dir: in.Dir, Truncated: in.HistoryTruncated, Verdict: verdictText(in.Results.Valid), VerdictClass: validClass(in.Results.Valid),
		Reasons: in.Results.Reasons, Gate: strings.Join(in.Results.Gate, ", "), Links: in.Links,
		GeneratedAt: time.Now().UTC().Format(time.RFC3339)}
	if !in.Start.IsZero() {
		v.Time = in.Start.Format(time.RFC3339)
	}
	if c := in.Results.Completion; c != nil {
		v.Completion = &completionView{Completion: *c,
			Reached: time.Duration(c.ReachedNS).Round(time.Millisecond).String(),
			Limit:   time.Duration(c.TimeLimitNS).Round(time.Millisecond).String()}
	}
	if v.Links == nil {
		v.Links = DefaultLinks(in.Dir)
	}
	v.Config, v.ConfigRaw = config(in)
	v.Checkers = checkerRows(in.Results)
	v.doubleWrites(in.Results)
	v.operations(in.Results)
	v.Linear = linearViews(in.Results)
	v.StoriesID = anchor.Stories
	v.Stories, v.StoryCounts = stories(in)
	v.Nemesis = listNemesis(nemesisRows(in.Nemesis), MaxNemesisRows)
	v.Refs = refsOf(v.Links)
	v.Figures, v.FiguresID = figures(in.History), anchor.Figures
	v.Timeline = timelineOf(in)
	v.Runbook = runbook(in)
	v.Metrics = metrics(in)
	v.Soak = soak(in)
	return v
}

// checkerRows is the checkers table, in the run's order (by name when
// results.json has none).
func checkerRows(res checker.Results) []checkerRow {
	var rows []checkerRow
	for _, name := range res.Names() {
		r, ok := res.Checkers[name]
		if !ok {
			continue
		}
		rows = append(rows, checkerRow{Name: name, Valid: r.Valid.String(), Class: validClass(r.Valid),
			Error: r.Error, Gating: r.Gating, ElapsedMS: float64(r.Elapsed) / float64(time.Millisecond)})
	}
	return rows
}

// doubleWrites fills the double-writes section from the checker's details.
func (v *view) doubleWrites(res checker.Results) {
	r, ok := res.Checkers[fence.NameDoubleWriter]
	if !ok || r.Details == nil {
		return
	}
	var d fence.DoubleWriterDetails
	if err := r.DecodeDetails(&d); err != nil {
		v.DWError = err.Error()
		return
	}
	v.DW = &d
	v.DWList = listViolations(d.Violations, MaxViolationsShown)
	if d.FirstViolationAfterNS != nil {
		v.FirstAfterSec = fmt.Sprintf("%.3f s", float64(*d.FirstViolationAfterNS)/1e9)
	}
}

// operations fills the operations section from the stats checker.
func (v *view) operations(res checker.Results) {
	r, ok := res.Checkers[stats.Name]
	if !ok || r.Details == nil {
		return
	}
	var d stats.StatsDetails
	if err := r.DecodeDetails(&d); err != nil {
		v.StatsError = err.Error()
		return
	}
	v.Stats = &d
	fs := make([]string, 0, len(d.Ops))
	for f := range d.Ops {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		v.Ops = append(v.Ops, opRow{F: f, C: d.Ops[f], Latency: d.LatencyMS[f]})
	}
}

// linearViews are the porcupine checkers' sections.
func linearViews(res checker.Results) []linearView {
	var out []linearView
	for _, name := range []string{linear.NameRegister, linear.NameMutex} {
		r, ok := res.Checkers[name]
		if !ok {
			continue
		}
		lv := linearView{Name: name, Valid: r.Valid.String(), Class: validClass(r.Valid), Error: r.Error}
		if r.Details != nil {
			var d linear.LinearDetails
			if err := r.DecodeDetails(&d); err != nil {
				lv.DecodeError = err.Error()
			} else if d.Model != "" {
				lv.D = &d
			}
		}
		out = append(out, lv)
	}
	return out
}

// figureView is one figure: an inline SVG (plots draws it from the
// history, html/template trusts it as markup) with its caption, or why
// there is none.
type figureView struct {
	Title, Note, Caption string
	SVG                  template.HTML
}

// figures draws the page's figures from the history, read once for all
// (lockview); a figure that cannot be drawn says why instead of
// disappearing.
func figures(h []history.Event) []figureView {
	if len(h) == 0 {
		return nil
	}
	v := lockview.Of(h)
	var out []figureView
	for _, fig := range []struct {
		title string
		draw  func(lockview.View) (plots.Figure, error)
	}{
		{"Latency of every operation", plots.Latency},
		{"Lock wait and hold", plots.WaitHold},
		{"Completions per second", plots.Throughput},
		{"Session events and refused calls", plots.Events},
	} {
		f := figureView{Title: fig.title}
		f.SVG, f.Caption, f.Note = DrawFigure(fig.draw, v)
		out = append(out, f)
	}
	return out
}

// DrawFigure draws one figure of package plots for a page: its inline
// SVG and caption, or, when it cannot be drawn, a note saying why (a
// figure never just disappears). The report and the compare page draw
// through it.
func DrawFigure(draw func(lockview.View) (plots.Figure, error), v lockview.View) (svg template.HTML, caption, note string) {
	f, err := draw(v)
	switch {
	case errors.Is(err, plots.ErrNothingToDraw):
		return "", "", "nothing to draw: " + err.Error()
	case err != nil:
		return "", "", "not drawn: " + err.Error()
	}
	// Our renderer's SVG: history text in it is escaped (plots' tests
	// feed it markup), and it names no URL.
	return template.HTML(f.SVG), f.Caption, ""
}

func config(in Page) ([]kv, string) {
	m := in.ConfigMap
	if m == nil && len(in.Config) > 0 {
		if err := json.Unmarshal(in.Config, &m); err != nil || m == nil {
			return nil, string(in.Config)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]kv, 0, len(keys))
	for _, k := range keys {
		val := fmt.Sprint(m[k])
		if b, err := json.Marshal(m[k]); err == nil {
			val = string(b)
			if s, ok := m[k].(string); ok {
				val = s
			}
		}
		out = append(out, configRow(k, m[k], val))
	}
	return out, ""
}

// configRow is one setting as a person reads it: a duration (test.json
// keeps time.Duration as nanoseconds, runview.DurationKey says which
// keys) as a Go duration, its raw value kept beside it so the file can
// still be searched for it; anything else as it is.
func configRow(key string, v any, shown string) kv {
	n, ok := v.(float64)
	if !ok || !runview.DurationKey(key) || n != float64(int64(n)) {
		return kv{Key: key, Value: shown}
	}
	return kv{Key: key, Value: time.Duration(int64(n)).String(), Raw: shown + " ns"}
}

// nemesisRows pairs each nemesis invocation with its completion, so a
// fault the nemesis started but never confirmed shows as such.
func nemesisRows(events []history.Event) []nemesisRow {
	var rows []nemesisRow
	pending := map[string][]int{} // f -> indexes of rows awaiting completion
	for _, e := range events {
		if e.Process != history.Nemesis {
			continue
		}
		if e.Type == history.Invoke {
			r := nemesisRow{Time: fmt.Sprintf("%.3f", float64(e.Time)/1e9), F: e.F, Outcome: "no completion"}
			fillNemesis(&r, e)
			rows = append(rows, r)
			pending[e.F] = append(pending[e.F], len(rows)-1)
			continue
		}
		q := pending[e.F]
		if len(q) == 0 {
			r := nemesisRow{Time: fmt.Sprintf("%.3f", float64(e.Time)/1e9), F: e.F, Outcome: string(e.Type)}
			fillNemesis(&r, e)
			rows = append(rows, r)
			continue
		}
		r := &rows[q[0]]
		pending[e.F] = q[1:]
		r.Outcome = string(e.Type)
		fillNemesis(r, e)
	}
	return rows
}

func fillNemesis(r *nemesisRow, e history.Event) {
	if e.Value != nil {
		if e.Value.Target != "" {
			r.Target = e.Value.Target
		}
		if e.Value.PID != 0 {
			r.PID = e.Value.PID
		}
		if e.Value.Verified != nil {
			r.Verified = fmt.Sprint(*e.Value.Verified)
		}
		if e.Value.Detail != "" {
			r.Detail = e.Value.Detail
		}
	}
	if e.Error != "" {
		r.Detail = strings.TrimSpace(r.Detail + " " + e.Error)
	}
}

// figureSource is one figure of package plots on the page (the Figures
// section and the metrics' waiters): its SVG and caption, or why it is
// not drawn.
const figureSource = `<figure class="plot">{{if .SVG}}{{.SVG}}<figcaption>{{.Caption}}</figcaption>{{else}}<figcaption>{{.Title}}: {{.Note}}</figcaption>{{end}}</figure>`

var _ = template.Must(pageTmpl.New("figure").Parse(figureSource))
