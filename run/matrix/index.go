package matrix

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"time"
)

// indexSource is the test-all page: one row per cell (what was expected,
// what happened, how often the bug was caught and how fast), and a link
// to every attempt's report. Self-contained like report.html: no script,
// no external asset; html/template escapes every value.
const indexSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<title>zkchaos {{.Command}}: {{.Passed}} of {{len .Rows}} as expected</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
.pass { color: #2e7d32; font-weight: bold; }
.skipped { color: #666; }
.wrong, .error, .unknown { color: #c62828; font-weight: bold; }
.repro { color: #222; font-weight: normal; }
.n { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<h1>zkchaos {{.Command}}</h1>
<p>{{.Passed}} of {{len .Rows}} cells as expected; written {{.Written}}. Each cell's outcome is judged on all its runs; each run links its report. A cell that expects only violations runs until its first one, up to its limit.</p>
<table>
<tr><th>cell</th><th>expected</th><th>outcome</th><th>caught</th><th>first violation after the first client op</th><th>runs (seed: actual, first violation, time)</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Expected}}</td><td class="{{.Outcome}}">{{.Outcome}}{{if .Skipped}}: {{.Skipped}}{{end}}{{if .Reproduce}}<div class="repro"><code>{{.Reproduce}}</code></div>{{end}}</td><td class="n">{{.Caught}}</td><td class="n">{{.Firsts}}</td>
<td>{{range .Runs}}<div>{{if .Href}}<a href="{{.Href}}">seed {{.Seed}}</a>{{else}}seed {{.Seed}}{{end}}: {{.Actual}}, {{.First}}, {{.Elapsed}}</div>{{end}}</td></tr>
{{end}}</table>
</body>
</html>
`

var indexPage = template.Must(template.New("index").Parse(indexSource))

type indexRow struct {
	Name, Expected, Outcome, Skipped, Caught, Firsts string
	// Reproduce is the cell's Reproduction.
	Reproduce string
	Runs      []indexRun
}

type indexRun struct {
	Seed                         int64
	Href, Actual, First, Elapsed string
}

// WriteIndex writes the matrix as index.html at path, titled for the
// command that ran it (test-all, gate: a gate's page said "test-all");
// links to the runs' reports are relative to path's folder, so the folder
// can be moved or kept as a CI artifact whole. A cell not as expected
// shows what reruns it (Reproduction, with exe the chaos binary; its
// folder absolute, as a command to paste on this machine).
func WriteIndex(path, command, exe string, rs []CellResult) error {
	base := filepath.Dir(path)
	view := struct {
		Command string
		Rows    []indexRow
		Passed  int
		Written string
	}{Command: command, Written: time.Now().UTC().Format(time.RFC3339)}
	for _, r := range rs {
		row := indexRow{Name: r.Name, Expected: r.Cell.ExpectString(), Outcome: string(r.Outcome), Skipped: r.SkippedBecause,
			Reproduce: Reproduction(exe, r)}
		if r.Outcome == Pass {
			view.Passed++
		}
		if r.Cell.ExpectsViolation() && r.Outcome != Skipped {
			row.Caught, row.Firsts = fmt.Sprintf("%d/%d", r.Detected, len(r.Attempts)), firstsOf(r)
		}
		for _, a := range r.Attempts {
			run := indexRun{Seed: a.Seed, Actual: actualString(r.Cell, a), First: firstOf(r.Cell, a),
				Elapsed: a.Elapsed.Round(time.Second).String()}
			if a.Dir != "" {
				if rel, err := filepath.Rel(base, filepath.Join(a.Dir, "report.html")); err == nil {
					run.Href = filepath.ToSlash(rel)
				}
			}
			row.Runs = append(row.Runs, run)
		}
		view.Rows = append(view.Rows, row)
	}
	var b bytes.Buffer
	if err := indexPage.Execute(&b, view); err != nil {
		return fmt.Errorf("render %s index: %w", command, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s index: %w", command, err)
	}
	return nil
}
