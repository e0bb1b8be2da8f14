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
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
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
	// PostgresDir holds the PostgreSQL resource's server log and, while
	// the run lasts, its data directory (--resource postgres).
	PostgresDir = "postgres"
	ZKDir       = "zk"
	WorkersDir  = "workers"
	MonitorFile = "monitor.jsonl" // the runbook monitor's samples (package monitor)
	// ResourcesFile is a soak's resource samples (package resources).
	ResourcesFile = "resources.jsonl"
	// ScheduleFile is the faults the nemesis injected, an entry a line
	// (nemesis.Plan); ReplayFile what replaying the run showed (package
	// replay).
	ScheduleFile = "schedule.json"
	ReplayFile   = "replay.json"
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

// CheckBase reports why run folders cannot be made at dir (nil when they
// can), creating nothing that stays: the deepest existing folder on the
// path must be a folder in which a new folder can be made, which a probe
// folder, removed at once, shows. A run checks its folder this way before
// it starts anything, so an unusable --results is refused as bad input
// rather than failing as the harness once processes are running.
func CheckBase(dir string) error {
	at := filepath.Clean(dir)
	for {
		st, err := os.Stat(at)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a folder", at)
			}
			break
		}
		parent := filepath.Dir(at)
		if !errors.Is(err, fs.ErrNotExist) || parent == at {
			return err
		}
		at = parent
	}
	probe, err := os.MkdirTemp(at, ".zkchaos-probe-")
	if err != nil {
		return fmt.Errorf("cannot create a folder in %s: %w", at, err)
	}
	if err := os.Remove(probe); err != nil {
		return fmt.Errorf("remove probe folder: %w", err)
	}
	return nil
}

// Run is one run's folder.
type Run struct {
	Dir string
}

// Create makes a new run folder under base for the test name and points
// the latest links at it. Folders are named by the start time in UTC with
// milliseconds, so they sort by start. Runs started in the same millisecond
// (parallel CI jobs, tests) get a suffix -001, -002, ..., which sorts after
// the bare time and before the next millisecond: mkdir is the claim, a
// racing run that loses it (EEXIST) tries the next name, so two runs never
// share a folder and no run fails for starting at the same time.
func Create(base, name string, now time.Time) (*Run, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	parent := filepath.Join(base, name)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create results folder: %w", err)
	}
	folder, err := mkdirUnique(parent, now.UTC().Format("20060102T150405.000Z"))
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: filepath.Join(parent, folder)}
	for _, sub := range []string{ZKDir, WorkersDir} {
		if err := os.Mkdir(r.Path(sub), 0o755); err != nil {
			return nil, fmt.Errorf("create run folder: %w", err)
		}
	}
	if err := relink(filepath.Join(base, "latest"), filepath.Join(name, folder)); err != nil {
		return nil, err
	}
	if err := relink(filepath.Join(parent, "latest"), folder); err != nil {
		return nil, err
	}
	return r, nil
}

// maxSameStamp bounds the runs that may start in one millisecond.
const maxSameStamp = 1000

// mkdirUnique creates parent/stamp, or the first free parent/stamp-NNN,
// and returns the name it created.
func mkdirUnique(parent, stamp string) (string, error) {
	for i := 0; i < maxSameStamp; i++ {
		name := stamp
		if i > 0 {
			name = fmt.Sprintf("%s-%03d", stamp, i)
		}
		err := os.Mkdir(filepath.Join(parent, name), 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create run folder: %w", err)
		}
	}
	return "", fmt.Errorf("create run folder: %d runs already started at %s in %s", maxSameStamp, stamp, parent)
}

// tmpSeq numbers the temporary links of this process.
var tmpSeq atomic.Uint64

// relink points link at target atomically: a new symlink under a name of
// its own (this process's PID and a counter, so concurrent runs, in this
// process or others, never share one) is renamed over the old link, so a
// reader never sees latest missing. Concurrent runs each rename theirs; the
// last rename wins, and every state in between is a valid link.
func relink(link, target string) error {
	tmp := fmt.Sprintf("%s.tmp-%d-%d", link, os.Getpid(), tmpSeq.Add(1))
	// Only a dead process with our PID can have left this name behind.
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
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
	return filepath.Join(r.Dir, filepath.FromSlash(WorkerLogName(process)))
}

// WorkerLogName is WorkerLog's name inside the run folder, with a slash
// (an fs.FS path).
func WorkerLogName(process int) string {
	return fmt.Sprintf("%s/p%d.log", WorkersDir, process)
}
