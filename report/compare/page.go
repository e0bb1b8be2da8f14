package compare

import "html/template"

// pageSource is the compare page; html/template escapes every value it
// inserts, the figures are our renderer's SVG.
const pageSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>zkchaos compare: {{.A.Name}} {{.A.Verdict}} vs {{.B.Name}} {{.B.Verdict}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { margin-bottom: 0.2em; }
.meta { color: #666; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; table-layout: fixed; width: 100%; max-width: 72em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f3f3f3; }
col.what { width: 16em; }
tr.differ td, tr.differ th { background: #fff3c4; }
tr.differ th::after { content: " \2260"; color: #a06000; }
.verdict { font-size: 1.8em; font-weight: bold; padding: 0.2em 0.5em; display: inline-block; border-radius: 0.2em; color: #fff; }
.verdict.valid { background: #2e7d32; }
.verdict.invalid { background: #c62828; }
.verdict.unknown { background: #ef8f00; }
td .valid, span.valid { color: #2e7d32; font-weight: bold; }
td .invalid, span.invalid { color: #c62828; font-weight: bold; }
td .unknown, span.unknown { color: #ef8f00; font-weight: bold; }
td .none { color: #888; }
td span.verdict { color: #fff; }
.note { color: #555; font-size: 0.9em; }
.incomplete { color: #c62828; font-weight: bold; }
td.n { font-variant-numeric: tabular-nums; }
figure { margin: 0.5em 0 1.5em; }
figcaption { font-weight: bold; }
figure svg { width: 100%; max-width: 72em; height: auto; display: block; }
code { font-family: ui-monospace, monospace; }
</style>
</head>
<body>
<h1>{{.A.Name}} vs {{.B.Name}}</h1>
<p class="meta">Two zkchaos runs side by side; written {{.GeneratedAt}}. Highlighted rows (&#8800;) differ between the runs.</p>

<table id="runs">
<colgroup><col class="what"/><col/><col/></colgroup>
<tr><th></th><th>A: {{.A.Name}}</th><th>B: {{.B.Name}}</th></tr>
<tr><th>run folder</th>{{template "where" .A}}{{template "where" .B}}</tr>
<tr><th>started</th><td>{{or .A.Start "unknown"}}</td><td>{{or .B.Start "unknown"}}</td></tr>
<tr><th>verdict</th><td><span class="verdict {{.A.Class}}">{{.A.Verdict}}</span></td><td><span class="verdict {{.B.Class}}">{{.B.Verdict}}</span></td></tr>
<tr><th>completeness</th>{{template "completion" .A}}{{template "completion" .B}}</tr>
<tr><th>why</th>{{template "reasons" .A}}{{template "reasons" .B}}</tr>
</table>

<h2 id="config">Configuration</h2>
<table>
<colgroup><col class="what"/><col/><col/></colgroup>
<tr><th>setting</th><th>A</th><th>B</th></tr>
{{range .Config}}<tr{{if .Differ}} class="differ"{{end}}><th>{{.What}}</th><td><code>{{.A}}</code></td><td><code>{{.B}}</code></td></tr>
{{end}}</table>
{{if .ConfigSame}}<p class="note">{{.ConfigSame}} other settings are the same in both runs (see each run's report).</p>{{end}}

<h2 id="checkers">Checkers</h2>
<table>
<colgroup><col class="what"/><col/><col/></colgroup>
<tr><th>checker</th><th>A</th><th>B</th></tr>
{{range .Checkers}}<tr{{if .Differ}} class="differ"{{end}}><th>{{.Name}}</th>{{template "verdictCell" .A}}{{template "verdictCell" .B}}</tr>
{{end}}</table>

<h2 id="violations">Violations by kind</h2>
{{if .Violations}}<table>
<colgroup><col class="what"/><col/><col/></colgroup>
<tr><th>checker: kind</th><th>A</th><th>B</th></tr>
{{range .Violations}}<tr{{if .Differ}} class="differ"{{end}}><th>{{.What}}</th><td class="n">{{.A}}</td><td class="n">{{.B}}</td></tr>
{{end}}</table>
{{else}}<p>No violation in either run.</p>{{end}}

<h2 id="figures">Key figures</h2>
<table>
<colgroup><col class="what"/><col/><col/></colgroup>
<tr><th>figure</th><th>A</th><th>B</th></tr>
{{range .Figures}}<tr{{if .Differ}} class="differ"{{end}}><th>{{.What}}</th><td class="n">{{.A}}</td><td class="n">{{.B}}</td></tr>
{{end}}</table>

<h2 id="timelines">Timelines</h2>
<p class="note">Each figure is drawn for A, then for B, on each run's own clock with its faults shaded.</p>
{{range .Timelines}}<h3>{{.Title}}</h3>
<figure><figcaption>A: {{$.A.Name}}</figcaption>{{template "figure" .A}}</figure>
<figure><figcaption>B: {{$.B.Name}}</figcaption>{{template "figure" .B}}</figure>
{{end}}
</body>
</html>
{{define "where"}}<td><code>{{.Path}}</code><br/><a href="{{.Report}}">report</a> &middot; <a href="{{.Folder}}">files</a></td>{{end}}
{{define "completion"}}<td>{{if .Complete}}{{.Completion}}{{else}}<span class="incomplete">{{.Completion}}</span>{{end}}</td>{{end}}
{{define "reasons"}}<td>{{range .Reasons}}<div>{{.}}</div>{{else}}<span class="note">every gating checker passed</span>{{end}}</td>{{end}}
{{define "verdictCell"}}<td><span class="{{.Class}}">{{.Valid}}</span>{{if .Note}}<div class="note">{{.Note}}</div>{{end}}</td>{{end}}
{{define "figure"}}{{if .Note}}<p class="note">{{.Note}}</p>{{end}}{{if .SVG}}{{.SVG}}{{else if not .Note}}<p class="note">not drawn</p>{{end}}{{end}}
`

var pageTmpl = template.Must(template.New("compare").Parse(pageSource))
