package serve

import (
	"bytes"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"sort"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/report/runview"
)

// filterKeys are the listing's filters, in the form's order; each is a
// query parameter matched exactly against the run's value.
var filterKeys = []string{"name", "recipe", "workload", "nemesis", "fencing", "verdict"}

// Unchecked is the verdict the listing gives a run without results.json.
const Unchecked = "unchecked"

// fieldsOf is a run's value for every filter.
func fieldsOf(e runview.Entry) map[string]string {
	v := Unchecked
	if e.Checked {
		v = e.Results.Valid.Word()
	}
	c := e.Config
	return map[string]string{"name": c.Name, "recipe": c.Recipe, "workload": c.Workload,
		"nemesis": c.NemesisString(), "fencing": c.Fencing, "verdict": v}
}

// filter keeps the runs matching every filter given in q.
func filter(runs []runview.Entry, q url.Values) []runview.Entry {
	var out []runview.Entry
	for _, e := range runs {
		f := fieldsOf(e)
		keep := true
		for _, k := range filterKeys {
			if want := q.Get(k); want != "" && f[k] != want {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

type indexView struct {
	Dir       string
	Total     int
	Filters   []filterView
	Filtered  bool
	Runs      []runRow
	Checked   []runRow
	TestAll   []pageRow
	Compares  []pageRow
	Generated string
}

type filterView struct {
	Key, Selected string
	Options       []string
}

type runRow struct {
	Path, Name, Time, Recipe, Workload, Nemesis, Fencing string
	Verdict, Class, Duration, Problem                    string
	Incomplete                                           bool
	// StoppedAtFirst: the run ended at its first violation, as asked
	// (chaos run --stop-at-first), not cut short.
	StoppedAtFirst bool
	Report, Folder string
	Label          string
}

type pageRow struct {
	Path, Href, Modified string
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	l, err := runview.List(s.fsys)
	if err != nil {
		s.log.Warn("list results folder", "err", err)
		http.Error(w, "cannot list the results folder: "+err.Error(), http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	v := indexView{Dir: s.root.Name(), Total: len(l.Runs), Generated: time.Now().UTC().Format(time.RFC3339)}
	for _, k := range filterKeys {
		v.Filters = append(v.Filters, filterView{Key: k, Selected: q.Get(k), Options: distinct(l.Runs, k)})
		v.Filtered = v.Filtered || q.Get(k) != ""
	}
	for _, e := range filter(l.Runs, q) {
		v.Runs = append(v.Runs, s.row(e))
	}
	for _, e := range l.Runs {
		if e.Checked {
			v.Checked = append(v.Checked, s.row(e))
		}
	}
	v.TestAll, v.Compares = pageRows(l.TestAll), pageRows(l.Compares)
	writePage(w, indexTmpl, v)
}

func (s *Server) row(e runview.Entry) runRow {
	f := fieldsOf(e)
	rr := runRow{Path: e.Path, Name: e.Config.Name, Recipe: f["recipe"], Workload: f["workload"], Nemesis: f["nemesis"],
		Fencing: f["fencing"], Verdict: f["verdict"], Class: f["verdict"], Problem: e.Problem,
		Folder: href(e.Path) + "/"}
	if !e.Config.Start.IsZero() {
		rr.Time = e.Config.Start.UTC().Format("2006-01-02 15:04:05Z")
	}
	if d := e.Duration(); d > 0 {
		rr.Duration = d.Round(100 * time.Millisecond).String()
	}
	if c := e.Results.Completion; e.Checked && c != nil && !c.Completed {
		rr.StoppedAtFirst = c.StoppedAtFirst
		rr.Incomplete = !c.StoppedAtFirst
	}
	if _, err := fs.Stat(s.fsys, path.Join(e.Path, store.ReportFile)); err == nil {
		rr.Report = href(path.Join(e.Path, store.ReportFile))
	}
	rr.Label = rr.Name + " · " + rr.Time + " · " + rr.Verdict + " · fencing " + rr.Fencing + " · " + rr.Nemesis
	return rr
}

// href is the absolute URL of a path of the results folder.
func href(p string) string { return (&url.URL{Path: "/" + p}).EscapedPath() }

func pageRows(ps []runview.Page) []pageRow {
	var out []pageRow
	for _, p := range ps {
		out = append(out, pageRow{Path: p.Path, Href: href(p.Path), Modified: p.Modified.UTC().Format("2006-01-02 15:04:05Z")})
	}
	return out
}

// distinct is every value of filter k among the runs, sorted, for the
// filter's menu.
func distinct(runs []runview.Entry, k string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range runs {
		if v := fieldsOf(e)[k]; !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// pageCSP is the policy of the pages this package writes: no script at
// all, styles inline, forms only to this server. (Files of the folder go
// without one: porcupine's pages need their scripts.)
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'"

// writePage renders a page of ours whole before sending it, so an error
// is a clean 500 rather than half a page.
func writePage(w http.ResponseWriter, t *template.Template, v any) {
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	_, _ = w.Write(b.Bytes())
}
