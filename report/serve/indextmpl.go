package serve

import "html/template"

// indexSource is the index page: filters as a GET form (no script), the
// runs newest first, a compare form, the other pages of the folder.
const indexSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>zkchaos results: {{len .Runs}} of {{.Total}} runs</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
.meta, .note { color: #666; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.valid { color: #2e7d32; font-weight: bold; }
.invalid { color: #c62828; font-weight: bold; }
.unknown { color: #ef8f00; font-weight: bold; }
.unchecked { color: #666; font-style: italic; }
form { margin: 0.5em 0 1em; }
form label { margin-right: 0.8em; white-space: nowrap; }
select { max-width: 40em; }
code { font-family: ui-monospace, monospace; }
</style>
</head>
<body>
<h1>zkchaos results</h1>
<p class="meta">Folder <code>{{.Dir}}</code>: {{.Total}} runs{{if .Filtered}}, {{len .Runs}} shown by the filters{{end}}; listed {{.Generated}}, newest first.</p>

<form method="get" action="/" id="filters">
{{range .Filters}}<label>{{.Key}} <select name="{{.Key}}"><option value="">any</option>{{$sel := .Selected}}{{range .Options}}<option value="{{.}}"{{if eq . $sel}} selected{{end}}>{{if .}}{{.}}{{else}}(none){{end}}</option>{{end}}</select></label>
{{end}}<button type="submit">Filter</button>{{if .Filtered}} <a href="/">clear</a>{{end}}
</form>

<table id="runs">
<tr><th>started (UTC)</th><th>name</th><th>recipe</th><th>workload</th><th>nemesis</th><th>fencing</th><th>verdict</th><th>duration</th><th>pages</th></tr>
{{range .Runs}}<tr><td>{{.Time}}</td><td>{{.Name}}</td><td>{{.Recipe}}</td><td>{{.Workload}}</td><td>{{.Nemesis}}</td><td>{{.Fencing}}</td>
<td><span class="{{.Class}}">{{.Verdict}}</span>{{if .Incomplete}} (incomplete){{else if .StoppedAtFirst}} (stopped at its first violation){{end}}{{if .Problem}}<div class="note">{{.Problem}}</div>{{end}}</td>
<td class="n">{{.Duration}}</td><td>{{if .Report}}<a href="{{.Report}}">report</a> &middot; {{end}}<a href="{{.Folder}}">files</a></td></tr>
{{else}}<tr><td colspan="9">No run{{if .Filtered}} matches the filters{{else}} in this folder yet{{end}}.</td></tr>
{{end}}</table>

<h2>Compare two runs</h2>
{{if ge (len .Checked) 2}}<form method="get" action="/_compare" id="compare">
<label>A <select name="a">{{range $i, $r := .Checked}}<option value="{{$r.Path}}"{{if eq $i 0}} selected{{end}}>{{$r.Label}}</option>{{end}}</select></label>
<label>B <select name="b">{{range $i, $r := .Checked}}<option value="{{$r.Path}}"{{if eq $i 1}} selected{{end}}>{{$r.Label}}</option>{{end}}</select></label>
<button type="submit">Compare</button>
</form>
{{else}}<p class="note">Comparing needs two checked runs.</p>{{end}}

<h2>test-all pages</h2>
{{if .TestAll}}<ul>{{range .TestAll}}<li><a href="{{.Href}}">{{.Path}}</a> <span class="note">{{.Modified}}</span></li>{{end}}</ul>
{{else}}<p class="note">None (chaos test-all writes one per matrix).</p>{{end}}

<h2>compare pages</h2>
{{if .Compares}}<ul>{{range .Compares}}<li><a href="{{.Href}}">{{.Path}}</a> <span class="note">{{.Modified}}</span></li>{{end}}</ul>
{{else}}<p class="note">None (chaos compare writes them into the results folder).</p>{{end}}
</body>
</html>
`

var indexTmpl = template.Must(template.New("index").Parse(indexSource))
