package runview

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
)

// Entry is one run in a listing: what its test.json, results.json and
// status.json say, without the evidence.
type Entry struct {
	Run
	// Checked is false when the run has no results.json (never checked).
	Checked bool
	// Problem says why the run could not be read, when it could not; the
	// listing shows it rather than leaving the run out.
	Problem string
}

// Page is an HTML page found in the results folder that is not a run's
// report: a test-all index.html or a compare page.
type Page struct {
	Path string
	// Modified orders pages newest first.
	Modified time.Time
}

// Listing is what a results folder holds, newest first.
type Listing struct {
	Runs     []Entry
	TestAll  []Page
	Compares []Page
}

// maxDepth bounds the walk: test-all runs sit at
// test-all/<time>/<cell>/<time>, four folders down; a deeper folder is
// nobody's layout.
const maxDepth = 6

// ComparePrefix starts the file name of every compare page, so a listing
// can find them.
const ComparePrefix = "compare-"

// List walks a results folder: every folder holding a history is a run
// (not entered further), every index.html outside runs a test-all page,
// every compare-*.html outside runs a compare page. Symlinks (the latest
// links) are not followed, so each run is listed once. Runs come newest
// first by start time.
func List(fsys fs.FS) (Listing, error) {
	var l Listing
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // a folder we may not read is left out
		}
		if !d.IsDir() {
			l.addPage(p, d)
			return nil
		}
		if p != "." && (strings.HasPrefix(d.Name(), ".") || strings.Count(p, "/") >= maxDepth) {
			return fs.SkipDir
		}
		if _, err := fs.Stat(fsys, path.Join(p, store.HistoryFile)); err == nil {
			l.Runs = append(l.Runs, summarize(fsys, p))
			return fs.SkipDir
		}
		return nil
	})
	sortNewestFirst(&l)
	return l, err
}

func (l *Listing) addPage(p string, d fs.DirEntry) {
	name := d.Name()
	isIndex := name == "index.html"
	isCompare := strings.HasPrefix(name, ComparePrefix) && strings.HasSuffix(name, ".html")
	if !isIndex && !isCompare {
		return
	}
	pg := Page{Path: p}
	if info, err := d.Info(); err == nil {
		pg.Modified = info.ModTime()
	}
	if isIndex {
		l.TestAll = append(l.TestAll, pg)
	} else {
		l.Compares = append(l.Compares, pg)
	}
}

// summarize reads a run's configuration, verdicts and status.
func summarize(fsys fs.FS, p string) Entry {
	e := Entry{Run: Run{Path: p}}
	sub, err := fs.Sub(fsys, p)
	if err != nil {
		e.Problem = err.Error()
		return e
	}
	raw, err := optional(sub, store.TestFile)
	if err == nil {
		e.Config, err = decodeConfig(raw)
	}
	if err != nil {
		e.Problem = err.Error()
	}
	if e.Config.Start.IsZero() {
		e.Config.Start = folderTime(path.Base(p))
	}
	if b, err := optional(sub, store.StatusFile); err == nil && b != nil {
		e.Evidence.Status, err = store.DecodeStatus(b)
		e.Evidence.HasStatus = err == nil
	}
	e.Results, err = readResults(sub)
	switch {
	case err == nil:
		e.Checked = true
	case errors.Is(err, ErrUnchecked):
	case e.Problem == "":
		e.Problem = err.Error()
	}
	return e
}

// folderTime reads the start time store put in a run folder's name
// (without a test.json the folder name is all there is).
func folderTime(name string) time.Time {
	stamp, _, _ := strings.Cut(name, "-")
	t, err := time.Parse("20060102T150405.000Z", stamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

func sortNewestFirst(l *Listing) {
	sort.SliceStable(l.Runs, func(i, j int) bool {
		a, b := l.Runs[i].Config.Start, l.Runs[j].Config.Start
		if !a.Equal(b) {
			return a.After(b)
		}
		return l.Runs[i].Path > l.Runs[j].Path
	})
	for _, ps := range [][]Page{l.TestAll, l.Compares} {
		sort.SliceStable(ps, func(i, j int) bool {
			if !ps[i].Modified.Equal(ps[j].Modified) {
				return ps[i].Modified.After(ps[j].Modified)
			}
			return ps[i].Path > ps[j].Path
		})
	}
}
