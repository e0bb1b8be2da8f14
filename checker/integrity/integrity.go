// Package integrity checks that a run's data can be right before any
// verdict rests on it: a history whose completions do not match its
// invocations, whose indexes repeat, whose clock runs backwards, or an
// apply log whose entries no invoked operation explains, can make every
// other checker pass (an empty history beside a full apply log is
// "valid" to all of them). Such data makes the run unknown: the
// integrity checker gates every run, whatever --gate says, because a
// verdict cannot be better than its data.
package integrity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"
)

// Name is the integrity checker's name.
const Name = "integrity"

// Problem kinds.
const (
	// KindEmptyHistory: no event at all beside a non-empty apply log.
	KindEmptyHistory = "empty-history"
	// KindIndexGap, KindDuplicateIndex, KindIndexOrder: indexes must run
	// 0, 1, 2, ... in file order (Writer assigns them so).
	KindIndexGap       = "index-gap"
	KindDuplicateIndex = "duplicate-index"
	KindIndexOrder     = "index-order"
	// KindTimeOrder: the run clock goes back from one event to the next.
	KindTimeOrder = "time-order"
	// KindUnmatched: a completion with no open invocation of its process.
	KindUnmatched = "unmatched-completion"
	// KindEarlyCompletion: a completion that comes before its own
	// invocation (in the file, or on the clock).
	KindEarlyCompletion = "completion-before-invocation"
	// KindMismatched: a completion whose operation or key differs from
	// its process's open invocation.
	KindMismatched = "mismatched-completion"
	// KindDoubleInvocation: a worker process invoked a new operation
	// while one was still open (a process is sequential; after an
	// unknown outcome it is retired, never reused).
	KindDoubleInvocation = "double-invocation"
	// KindUnattributed: an apply-log entry that no invoked read or write
	// of a known process explains.
	KindUnattributed = "unattributed-apply-entry"
)

// maxListed is how many problems are listed; counts stay exact. A broken
// history tends to break everywhere at once, and the first few say what
// happened.
const maxListed = 50

// Problem is one thing that cannot be right.
type Problem struct {
	Kind string `json:"kind"`
	// Index is the history event (-1: none); Seq the apply-log entry (0:
	// none).
	Index   int64  `json:"index"`
	Seq     int64  `json:"seq,omitempty"`
	Message string `json:"message"`
}

// Details is the evidence of the integrity checker.
type Details struct {
	Events          int `json:"events"`
	ApplyLogEntries int `json:"apply_log_entries"`
	// Attributed counts the apply-log entries matched to an invoked read
	// or write.
	Attributed int `json:"attributed"`
	// OpenAtEnd counts invocations the history never completed (a run
	// that was stopped; their outcome is unknown, which is allowed).
	OpenAtEnd int `json:"open_at_end"`
	// Problems lists the first problems (history order, then apply-log
	// order); ProblemCounts is exact.
	Problems        []Problem      `json:"problems"`
	ProblemCounts   map[string]int `json:"problem_counts"`
	ProblemsOmitted int            `json:"problems_omitted,omitempty"`
}

func (d *Details) add(p Problem) {
	d.ProblemCounts[p.Kind]++
	if len(d.Problems) >= maxListed {
		d.ProblemsOmitted++
		return
	}
	d.Problems = append(d.Problems, p)
}

// Check checks the history's integrity and the apply log's attribution
// to it. Valid when nothing is wrong, unknown with the first problems
// otherwise; never invalid, because broken data shows no violation of
// the lock, only that nothing can be concluded.
func Check(ctx context.Context, in checker.Input) checker.Result {
	d := Details{Events: len(in.History), ApplyLogEntries: len(in.ApplyLog), Problems: []Problem{}, ProblemCounts: map[string]int{}}
	if len(in.History) == 0 && len(in.ApplyLog) > 0 {
		d.add(Problem{Kind: KindEmptyHistory, Index: -1,
			Message: fmt.Sprintf("the history is empty but the register's apply log has %d entries", len(in.ApplyLog))})
	}
	if !checkHistory(ctx, in.History, &d) {
		return checker.Cancelled(ctx)
	}
	if !attribute(ctx, in, &d) {
		return checker.Cancelled(ctx)
	}
	if len(d.ProblemCounts) == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Unknown, Error: summary(d), Details: d}
}

// summary is the reason in one line: counts by kind and the first
// problem.
func summary(d Details) string {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(d.ProblemCounts)) {
		n := d.ProblemCounts[k]
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	return fmt.Sprintf("the history or apply log cannot be right (%s), so no verdict can rest on it; first: %s",
		strings.Join(kinds, ", "), d.Problems[0].Message)
}
