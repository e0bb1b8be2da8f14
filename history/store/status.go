package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StatusFile is status.json: how far the controller got. It is rewritten
// atomically at every phase change, so a run whose controller was killed
// leaves the last phase it reached, and a run folder without it was never
// carried through by a controller at all. The checkers refuse to call such
// a run valid (see checker.Completion).
const StatusFile = "status.json"

// Phase is a stage of a run, in order.
type Phase string

// The phases a controller goes through. PhaseDone is written once the
// history is closed, before the checkers run.
const (
	PhaseSetup    Phase = "setup"
	PhaseWorkload Phase = "workload"
	PhaseFinal    Phase = "final"
	PhaseTeardown Phase = "teardown"
	PhaseDone     Phase = "done"
)

// Why the workload stopped (Status.StoppedBecause), besides free text for
// harness failures.
const (
	StopTimeLimit   = "time-limit"
	StopInterrupted = "interrupted"
	// StopFirstViolation (followed by the checker in parentheses): the
	// run was asked to stop at its first violation (chaos run
	// --stop-at-first) and an online check found one.
	StopFirstViolation = "first-violation"
	// StopScheduleDone: the run followed a schedule and was asked to end
	// once its last entry was undone (chaos run --stop-after-schedule),
	// and did. A complete run, as one that ran its time limit.
	StopScheduleDone = "schedule-done"
)

// StoppedAtFirstBecause is StoppedBecause for a workload that ended at
// the first violation the online checker found.
func StoppedAtFirstBecause(checker string) string {
	return StopFirstViolation + " (" + checker + ")"
}

// StoppedAtFirst says s records a workload that ended at its first
// violation, and names the online checker that found it.
func StoppedAtFirst(s Status) (checker string, ok bool) {
	rest, ok := strings.CutPrefix(s.StoppedBecause, StopFirstViolation)
	if !ok {
		return "", false
	}
	return strings.Trim(strings.TrimSpace(rest), "()"), true
}

// Status is status.json.
type Status struct {
	Phase Phase `json:"phase"`
	// StoppedBecause is why the workload ended: StopTimeLimit when it ran
	// its whole time, StopScheduleDone when it followed a schedule to its
	// end as asked, StopInterrupted (with the signal) when a person or CI
	// stopped it, StopFirstViolation (with the checker) when it was asked
	// to stop at its first violation and did, or the harness failure that
	// ended it. Empty while the workload runs.
	StoppedBecause string `json:"stopped_because,omitempty"`
	// TimeLimitNS is the workload's time limit; WorkloadNS how long it ran
	// (set when it ended).
	TimeLimitNS int64 `json:"time_limit_ns"`
	WorkloadNS  int64 `json:"workload_ns"`
	// FinalPhase says the final phase ran to its end: every fault undone,
	// the recovery wait, each worker's final read.
	FinalPhase bool `json:"final_phase"`
	// Segment is 1 + the number of times the run was resumed (chaos soak
	// --resume): a run above 1 had gaps, recorded in test.json's
	// segments. Phase, StoppedBecause, TimeLimitNS, WorkloadNS and
	// FinalPhase are the last segment's. 0 (absent) is a run never resumed.
	Segment       int       `json:"segment,omitempty"`
	ControllerPID int       `json:"controller_pid"`
	Updated       time.Time `json:"updated"`
}

// WriteStatus replaces status.json atomically.
func WriteStatus(path string, s Status) error {
	s.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// ReadStatus reads status.json; an error wrapping os.ErrNotExist means the
// run has none.
func ReadStatus(path string) (Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Status{}, fmt.Errorf("read status: %w", err)
	}
	s, err := DecodeStatus(b)
	if err != nil {
		return s, fmt.Errorf("read status %s: %w", path, err)
	}
	return s, nil
}

// DecodeStatus parses the bytes of a status.json, for readers that do not
// open it by path (the pages served from an os.Root).
func DecodeStatus(b []byte) (Status, error) {
	var s Status
	err := json.Unmarshal(b, &s)
	return s, err
}

// WriteFileAtomic writes b to path through a temporary file in the same
// folder, fsync'd and renamed over path, so a reader sees the old content
// or the new, never half of either. The file is 0644 like every other
// file of a run folder (a temporary file is created 0600, which made
// results.json and status.json unreadable to a CI job's other user).
func WriteFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	werr := f.Chmod(0o644)
	if werr == nil {
		_, werr = f.Write(b)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}
