package runview

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
)

// First is when a run showed its first violation, on the run clock (time
// since the controller started, the history's clock), beside its first
// client operation. The time to first violation a CI gate waits for is
// After: measured from the first client operation, because what comes
// before it (the ensemble's start, the workers' start) is setup, which the
// faults' schedule does not change.
type First struct {
	// FirstOp is the invocation of the first client operation.
	FirstOp time.Duration
	// Violation is the first violation of any of the checkers asked
	// about, as checker.FirstViolation reads it; Checker names its
	// checker. Found is false when none of them found one.
	Violation time.Duration
	Checker   string
	Found     bool
}

// After is the time from the first client operation to the first
// violation (meaningful only when Found).
func (f First) After() time.Duration { return f.Violation - f.FirstOp }

// ErrNoClientOp says the history holds no client operation: the run never
// got to its workload, so it has no time to a first violation.
var ErrNoClientOp = errors.New("no client operation in " + store.HistoryFile)

// ReadFirst reads a checked run folder's first client operation
// (history.jsonl) and the earliest first violation that the named
// checkers record in results.json (all checkers when none are named).
func ReadFirst(fsys fs.FS, checkers ...string) (First, error) {
	var f First
	op, err := firstClientOp(fsys)
	if err != nil {
		return f, err
	}
	f.FirstOp = op
	res, err := readResults(fsys)
	if err != nil {
		return f, err
	}
	for name, r := range res.Checkers {
		if r.Valid != checker.Invalid || (len(checkers) > 0 && !slices.Contains(checkers, name)) {
			continue
		}
		if d := checker.FirstViolation(r); d != nil && (!f.Found || *d < f.Violation) {
			f.Violation, f.Checker, f.Found = *d, name, true
		}
	}
	return f, nil
}

// firstClientOp is the run-clock time of the first invocation by a client
// process: the nemesis' operations and the instant observations (a
// session connecting) are not the workload's operations.
func firstClientOp(fsys fs.FS) (time.Duration, error) {
	f, err := fsys.Open(store.HistoryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, ErrNotRun
	}
	if err != nil {
		return 0, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	h, err := history.Read(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", store.HistoryFile, err)
	}
	for _, e := range h.Events {
		if e.Process != history.Nemesis && e.Type == history.Invoke && !checker.IsInstant(e.F) {
			return time.Duration(e.Time), nil
		}
	}
	return 0, ErrNoClientOp
}

// Median is the middle of ds (the upper one of an even count), nil for
// none; ds is not changed.
func Median(ds []time.Duration) *time.Duration {
	if len(ds) == 0 {
		return nil
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := s[len(s)/2]
	return &m
}

// Percentile is the p-th percentile of ds by the nearest rank (the
// smallest value at least p% of ds are at or below: of 20 values the
// 95th is the 19th smallest, of 3 the largest), nil for none; ds is not
// changed.
func Percentile(ds []time.Duration, p int) *time.Duration {
	if len(ds) == 0 {
		return nil
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	v := s[min(max(rank, 1), len(s))-1]
	return &v
}
