package report

import (
	"html/template"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history/store"
)

// The most entries the page lists of its long tables. A long run with
// many faults finds thousands of double writes and makes thousands of
// nemesis operations: listed whole they were about 1 MB of a 1.5 h run's
// page and thousands of elements for the browser to lay out
// (docs/measurements.md, "Report and pages"). Every one stays in the run's
// files, and the page says how many it leaves out and where they are.
const (
	// MaxViolationsShown is how many double writes the page lists; the
	// first of each kind is always among them.
	MaxViolationsShown = 50
	// MaxNemesisRows is how many nemesis operations the page lists, the
	// first ones: a fault's effect is read on the figures and the
	// timeline, where every fault is shaded.
	MaxNemesisRows = 200
)

// violationView is a double write as the page lists it, with its index
// in results.json (the index its timeline mark and story are named by).
type violationView struct {
	Index int
	fence.Violation
}

// dwList is the double-writer section's list: what it shows and what it
// leaves to results.json.
type dwList struct {
	Shown []violationView
	// Kept is how many violations results.json lists; More how many of
	// them the page does not.
	Kept, More int
	// Path is where results.json lists them.
	Path string
}

// listViolations picks at most max of vs to show: the first of each
// kind, so that every kind found has an example on the page, then the
// earliest of the rest; in results.json's order.
func listViolations(vs []fence.Violation, max int) dwList {
	pick := make([]bool, len(vs))
	n := 0
	seen := map[string]bool{}
	for i, v := range vs {
		if !seen[v.Kind] && n < max {
			seen[v.Kind], pick[i] = true, true
			n++
		}
	}
	for i := range vs {
		if n >= max {
			break
		}
		if !pick[i] {
			pick[i] = true
			n++
		}
	}
	l := dwList{Shown: make([]violationView, 0, n), Kept: len(vs), More: len(vs) - n,
		Path: "checkers." + fence.NameDoubleWriter + ".violations"}
	for i, v := range vs {
		if pick[i] {
			l.Shown = append(l.Shown, violationView{Index: i, Violation: v})
		}
	}
	return l
}

// nemesisList is the nemesis section's table: the first rows, and how
// many more the history has.
type nemesisList struct {
	Rows []nemesisRow
	More int
}

// listNemesis keeps the first max rows.
func listNemesis(rows []nemesisRow, max int) nemesisList {
	if len(rows) <= max {
		return nemesisList{Rows: rows}
	}
	return nemesisList{Rows: rows[:max], More: len(rows) - max}
}

// fileRef names one of the run's files for a sentence of the page: a
// link when the page links the file (it exists), else its name.
type fileRef struct {
	Name string
	Href string
}

// filerefSource writes a fileRef.
const filerefSource = `{{if .Href}}<a href="{{.Href}}">{{.Name}}</a>{{else}}<code>{{.Name}}</code>{{end}}`

var _ = template.Must(pageTmpl.New("fileref").Parse(filerefSource))

// refTo is file name among the page's links.
func refTo(links []Link, name string) fileRef {
	for _, l := range links {
		if l.Href == name {
			return fileRef{Name: name, Href: name}
		}
	}
	return fileRef{Name: name}
}

// fileRefs are the files the bounded tables point to.
type fileRefs struct{ Results, History fileRef }

func refsOf(links []Link) fileRefs {
	return fileRefs{Results: refTo(links, store.ResultsFile), History: refTo(links, store.HistoryFile)}
}
