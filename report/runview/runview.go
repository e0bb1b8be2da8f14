// Package runview reads stored run folders for whoever shows or re-judges
// them: runner.Check (the checkers' input), chaos compare and chaos serve.
// One reader of the files store lays out, so the three cannot disagree on
// what a run folder holds. It reads through an fs.FS rooted at the run
// folder, so chaos serve reads only inside its os.Root (a symlink or a
// ".." leading out of the results folder fails to open) while the command
// line passes os.DirFS.
package runview

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/resource/register"
)

// ErrNotRun says a folder holds no history.jsonl: it is not a run folder
// (or a run that never got as far as recording).
var ErrNotRun = errors.New("not a run folder: no " + store.HistoryFile)

// ErrUnchecked says a run folder has no results.json: it was never
// checked (its controller was killed before the checkers ran); `chaos
// check` on it writes one.
var ErrUnchecked = errors.New("no " + store.ResultsFile + ": the run was never checked")

// Evidence is what a run recorded, the checkers' input.
type Evidence struct {
	// Test is test.json as written (nil when the folder has none).
	Test    []byte
	History history.ReadResult
	// ApplyLog is nil when the folder has no register.jsonl.
	ApplyLog []register.Entry
	// Status is status.json; HasStatus is false when there is none (a
	// folder no controller carried through).
	Status    store.Status
	HasStatus bool
}

// ReadEvidence reads a run folder's evidence; fsys is rooted at the run
// folder. A folder with a status but no history is a run whose controller
// died in its setup, before the history began: its history is empty. A
// folder with neither is ErrNotRun.
func ReadEvidence(fsys fs.FS) (Evidence, error) {
	var ev Evidence
	f, err := fsys.Open(store.HistoryFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := fs.Stat(fsys, store.StatusFile); serr != nil {
			return ev, ErrNotRun
		}
	case err != nil:
		return ev, fmt.Errorf("open history: %w", err)
	default:
		ev.History, err = history.Read(f)
		f.Close()
		if err != nil {
			return ev, fmt.Errorf("%s: %w", store.HistoryFile, err)
		}
	}
	if ev.Test, err = optional(fsys, store.TestFile); err != nil {
		return ev, err
	}
	if ev.ApplyLog, err = readApplyLog(fsys); err != nil {
		return ev, err
	}
	b, err := optional(fsys, store.StatusFile)
	if err != nil || b == nil {
		return ev, err
	}
	if ev.Status, err = store.DecodeStatus(b); err != nil {
		return ev, fmt.Errorf("%s: %w", store.StatusFile, err)
	}
	ev.HasStatus = true
	return ev, nil
}

func readApplyLog(fsys fs.FS) ([]register.Entry, error) {
	f, err := fsys.Open(store.ApplyLogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open apply log: %w", err)
	}
	defer f.Close()
	entries, err := register.ReadApplyLogFrom(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", store.ApplyLogFile, err)
	}
	return entries, nil
}

// optional reads a file of the run; nil, nil when it does not exist.
func optional(fsys fs.FS, name string) ([]byte, error) {
	b, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// Run is one checked run as the pages show it.
type Run struct {
	// Path names the run folder: as given on the command line, or its
	// slash path inside the served results folder.
	Path    string
	Config  Config
	Results checker.Results
	// Evidence is filled by Load only (the listing needs none of it).
	Evidence Evidence
}

// Load reads a checked run whole: configuration, verdicts and evidence.
// fsys is rooted at the run folder; a folder that is not a run is
// ErrNotRun, one without results.json ErrUnchecked.
func Load(fsys fs.FS, path string) (*Run, error) {
	ev, err := ReadEvidence(fsys)
	if err != nil {
		return nil, err
	}
	r := &Run{Path: path, Evidence: ev}
	if r.Config, err = decodeConfig(ev.Test); err != nil {
		return nil, err
	}
	if r.Results, err = readResults(fsys); err != nil {
		return nil, err
	}
	return r, nil
}

func readResults(fsys fs.FS) (checker.Results, error) {
	b, err := optional(fsys, store.ResultsFile)
	if err != nil {
		return checker.Results{}, err
	}
	if b == nil {
		return checker.Results{}, ErrUnchecked
	}
	res, err := checker.DecodeResults(b)
	if err != nil {
		return res, fmt.Errorf("%s: %w", store.ResultsFile, err)
	}
	return res, nil
}

// Duration is how long the workload ran: the checkers' completion record,
// else what status.json says; zero when neither knows.
func (r *Run) Duration() time.Duration {
	if c := r.Results.Completion; c != nil {
		return time.Duration(c.ReachedNS)
	}
	return time.Duration(r.Evidence.Status.WorkloadNS)
}
