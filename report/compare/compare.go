// Package compare writes the page that shows two runs side by side, made
// for "the same test, fenced and unfenced": what differs in their
// configuration, their verdicts, checker by checker, their violations by
// kind, their key figures and their timelines. Like report.html it is one
// self-contained page (no script, no external asset), and it links each
// run's report by a relative path, so it works opened from disk and served
// by chaos serve alike.
package compare

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/report/runview"
)

// Side is one of the two runs and where its folder is as seen from the
// page (a relative slash path; "" when the page sits in the run folder).
type Side struct {
	Run  *runview.Run
	Href string
}

// ReportHref is the link to the run's report.html.
func (s Side) ReportHref() string { return path.Join(s.Href, store.ReportFile) }

// FolderHref is the link to the run's folder (chaos serve lists it).
func (s Side) FolderHref() string {
	if s.Href == "" {
		return "./"
	}
	return strings.TrimSuffix(s.Href, "/") + "/"
}

// Render writes the page comparing a and b.
func Render(a, b Side) ([]byte, error) {
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, build(a, b)); err != nil {
		return nil, fmt.Errorf("render compare page: %w", err)
	}
	return buf.Bytes(), nil
}

// Write renders the page to file out, replacing it atomically; the links
// to the runs are made relative to out's folder. dirA and dirB are the
// run folders on disk.
func Write(out string, a, b *runview.Run, dirA, dirB string) error {
	sa, err := sideFrom(out, a, dirA)
	if err != nil {
		return err
	}
	sb, err := sideFrom(out, b, dirB)
	if err != nil {
		return err
	}
	page, err := Render(sa, sb)
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(out, page)
}

func sideFrom(out string, r *runview.Run, dir string) (Side, error) {
	outDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return Side{}, fmt.Errorf("compare page folder: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Side{}, fmt.Errorf("run folder %s: %w", dir, err)
	}
	rel, err := filepath.Rel(outDir, abs)
	if err != nil {
		return Side{}, fmt.Errorf("link from %s to %s: %w", outDir, abs, err)
	}
	if rel == "." {
		rel = ""
	}
	return Side{Run: r, Href: filepath.ToSlash(rel)}, nil
}

// DefaultPath is where chaos compare writes the page when not told: in
// the results folder the two runs share (the deepest folder holding both
// runs' <results>/<name>/<time> layouts), named after both runs, so that
// chaos serve on that folder lists it and its links stay inside it.
func DefaultPath(dirA, dirB string) (string, error) {
	a, err := filepath.Abs(dirA)
	if err != nil {
		return "", err
	}
	b, err := filepath.Abs(dirB)
	if err != nil {
		return "", err
	}
	base := commonDir(filepath.Dir(filepath.Dir(a)), filepath.Dir(filepath.Dir(b)))
	name := fmt.Sprintf("%s%s-vs-%s.html", runview.ComparePrefix, slug(a), slug(b))
	return filepath.Join(base, name), nil
}

// slug names a run folder in a file name: test name and start time, the
// name cut so that two fit in a file name.
func slug(dir string) string {
	name := filepath.Base(filepath.Dir(dir))
	if len(name) > 60 {
		name = name[:60]
	}
	return name + "-" + filepath.Base(dir)
}

// commonDir is the deepest folder that holds both a and b (absolute,
// clean).
func commonDir(a, b string) string {
	for {
		rel, err := filepath.Rel(a, b)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return a
		}
		parent := filepath.Dir(a)
		if parent == a {
			return a
		}
		a = parent
	}
}
