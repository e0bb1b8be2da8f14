// Package store owns the layout of the results folder:
//
//	<base>/<test-name>/<timestamp>/   one run
//	<base>/latest                     symlink to the newest run
//	<base>/<test-name>/latest         symlink to that test's newest run
//
// Every other package asks a Run for its paths rather than joining names
// itself, so the layout is defined once and chaos check finds what chaos
// run wrote.
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// File names inside a run folder.
const (
	HistoryFile  = "history.jsonl"
	ApplyLogFile = "register.jsonl"
	TestFile     = "test.json"
	ResultsFile  = "results.json"
	ReportFile   = "report.html"
	LogFile      = "controller.log"
	JanitorLog   = "janitor.log"
	RegisterLog  = "register.log"
	ZKDir        = "zk"
	WorkersDir   = "workers"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ValidName reports whether name can be a test name: it becomes a folder,
// so it must not contain a path separator or start with a dot.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("test name %q: use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Run is one run's folder.
type Run struct {
	Dir string
}

// Create makes a new run folder under base for the test name and points
// the latest links at it. The timestamp has milliseconds so that two runs
// started in the same second (tests) do not collide; a collision still
// fails rather than mixing two runs.
func Create(base, name string, now time.Time) (*Run, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	stamp := now.UTC().Format("20060102T150405.000Z")
	dir := filepath.Join(base, name, stamp)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run folder: %w", err)
	}
	r := &Run{Dir: dir}
	for _, sub := range []string{ZKDir, WorkersDir} {
		if err := os.Mkdir(r.Path(sub), 0o755); err != nil {
			return nil, fmt.Errorf("create run folder: %w", err)
		}
	}
	if err := relink(filepath.Join(base, "latest"), filepath.Join(name, stamp)); err != nil {
		return nil, err
	}
	if err := relink(filepath.Join(base, name, "latest"), stamp); err != nil {
		return nil, err
	}
	return r, nil
}

// relink points link at target atomically (a new symlink renamed over the
// old), so a reader never sees latest missing.
func relink(link, target string) error {
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	return nil
}

// Open returns the run stored in dir, which must hold a history.
func Open(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	if _, err := os.Stat(r.Path(HistoryFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a run folder: no %s", dir, HistoryFile)
		}
		return nil, fmt.Errorf("open run %s: %w", dir, err)
	}
	return r, nil
}

// Path is the path of a file or folder in the run.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// WorkerLog is the stderr log of one worker process.
func (r *Run) WorkerLog(process int) string {
	return filepath.Join(r.Dir, WorkersDir, fmt.Sprintf("p%d.log", process))
}
