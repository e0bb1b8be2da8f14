package fence

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// NameDoubleWriter is the exact checker over the apply log.
const NameDoubleWriter = "double-writer"

// Violation kinds of the double-writer checker.
const (
	// KindTokenRegression: the resource accepted a write with a lower token
	// than one it had already accepted, i.e. a stale holder got through.
	KindTokenRegression = "token-regression"
	// KindInterleavedGrants: a grant wrote again after a different grant had
	// written, i.e. two holders were writing in the same period.
	KindInterleavedGrants = "interleaved-grants"
	// KindLostUpdate: an accepted counter write did not build on the
	// previous accepted write, i.e. some increment was overwritten.
	KindLostUpdate = "lost-update"
)

// Violation is one piece of evidence that the lock failed to protect the
// register. Entries are the apply-log lines involved, oldest first; the
// last one is the write that made the violation.
type Violation struct {
	Kind      string  `json:"kind"`
	Key       string  `json:"key"`
	Tokens    []int64 `json:"tokens"`
	Processes []int   `json:"processes"`
	Seqs      []int64 `json:"seqs"`
	Values    []int64 `json:"values"`
	// Expected and Actual are the values of a lost update.
	Expected *int64           `json:"expected,omitempty"`
	Actual   *int64           `json:"actual,omitempty"`
	Message  string           `json:"message"`
	Entries  []register.Entry `json:"entries"`
}

// KeySummary is what the apply log shows for one key.
type KeySummary struct {
	AcceptedWrites int `json:"accepted_writes"`
	AcceptedReads  int `json:"accepted_reads"`
	// RejectedWrites and RejectedReads are the register's token
	// rejections: fencing doing its job, not violations.
	RejectedWrites int `json:"rejected_writes"`
	RejectedReads  int `json:"rejected_reads"`
	// UntokenedWrites were accepted without a token; no grant can be told
	// for them, so only the lost-update rule applies to them.
	UntokenedWrites int `json:"untokened_writes,omitempty"`
	// Grants is the number of distinct (token, process) pairs that wrote.
	Grants     int   `json:"grants"`
	FinalValue int64 `json:"final_value"`
	// HistoryOKWrites is how many writes the workers saw succeed.
	HistoryOKWrites int `json:"history_ok_writes"`
}

// DoubleWriterDetails is the evidence of the double-writer checker.
type DoubleWriterDetails struct {
	Violations []Violation `json:"violations"`
	// ViolationCounts is exact even when Violations was cut short.
	ViolationCounts   map[string]int `json:"violation_counts"`
	ViolationsOmitted int            `json:"violations_omitted,omitempty"`
	// FirstViolationSeq is the Seq of the write that made the first
	// violation (0: none).
	FirstViolationSeq int64 `json:"first_violation_seq,omitempty"`
	// FirstViolationAfterNS is that write's commit time after the run's
	// start, from the register's wall clock (needs Input.StartWall).
	FirstViolationAfterNS *int64 `json:"first_violation_after_ns,omitempty"`
	// FirstViolationTimeNS is the history time (run clock) of the worker's
	// ok for that write, when the history has it: the time the writer
	// learnt its write was accepted, an upper bound of the commit.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
	// Reason says why the answer is unknown.
	Reason          string                `json:"reason,omitempty"`
	Entries         int                   `json:"entries"`
	AcceptedWrites  int                   `json:"accepted_writes"`
	TokenRejections int                   `json:"token_rejections"`
	SeqProblems     []string              `json:"seq_problems,omitempty"`
	Keys            map[string]KeySummary `json:"keys"`
}

// CheckDoubleWriter is the exact checker over the apply log: the Stream
// fed the whole log in commit order, then judged against the history
// (did the log keep every write the workers saw succeed?). One pass with
// constant work per entry (map lookups), so it stays usable on soak runs
// with millions of writes.
func CheckDoubleWriter(ctx context.Context, in checker.Input) checker.Result {
	log := in.ApplyLog
	if !slices.IsSortedFunc(log, func(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) }) {
		log = slices.Clone(log)
		slices.SortStableFunc(log, func(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	s := NewStream(in.Limit(), in.Fencing)
	for i := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		s.Add(&log[i])
	}
	d := s.Result()
	missing := countHistoryWrites(&d, in.History)
	if s.first != nil {
		firstTimes(&d, s.first, in)
	}

	var r checker.Result
	total := s.Violations()
	switch {
	case total > 0:
		// Evidence of corruption stands even if the log is incomplete.
		r.Valid = checker.Invalid
	case len(log) == 0 && len(missing) > 0:
		r.Valid = checker.Unknown
		d.Reason = "the apply log is empty but the history shows writes that succeeded: the register's log is missing, so nothing can be decided"
	case len(missing) > 0:
		r.Valid = checker.Unknown
		d.Reason = fmt.Sprintf("the apply log has fewer accepted writes than the history shows succeeded, for keys %v: the log is incomplete", missing)
	case len(d.SeqProblems) > 0:
		r.Valid = checker.Unknown
		d.Reason = "the apply log has gaps or repeats in its Seq numbers: entries are missing, so a violation could hide there"
	case d.AcceptedWrites == 0:
		// A run in which nothing was written (workers that never connected,
		// a subject that cannot start) has shown nothing about the lock:
		// calling it valid would let a broken setup pass a CI gate.
		r.Valid = checker.Unknown
		d.Reason = "no write was accepted by the register: the run exercised nothing, so nothing can be decided"
	default:
		r.Valid = checker.Valid
	}
	r.Error = d.Reason
	if total > 0 {
		r.Error = violationSummary(d, total)
	}
	r.Details = d
	return r
}

// countHistoryWrites adds to each key's summary the writes the workers saw
// succeed, and returns the keys (sorted) whose log holds fewer accepted
// writes than that: a log that lost entries.
func countHistoryWrites(d *DoubleWriterDetails, hist []history.Event) []string {
	for _, e := range hist {
		if e.F == history.FWrite && e.Type == history.OK && e.Process != history.Nemesis {
			sum := d.Keys[e.Key]
			sum.HistoryOKWrites++
			d.Keys[e.Key] = sum
		}
	}
	var missing []string
	for k, sum := range d.Keys {
		if sum.HistoryOKWrites > sum.AcceptedWrites {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	return missing
}

// violationSummary says in one line what the evidence shows: how many
// violations of which kinds, and the first one.
func violationSummary(d DoubleWriterDetails, total int) string {
	var kinds []string
	for _, k := range []string{KindTokenRegression, KindInterleavedGrants, KindLostUpdate} {
		if n := d.ViolationCounts[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
	}
	noun := "violations"
	if total == 1 {
		noun = "violation"
	}
	msg := fmt.Sprintf("%d %s in the apply log (%s)", total, noun, strings.Join(kinds, ", "))
	if len(d.Violations) > 0 {
		msg += ", first: " + d.Violations[0].Message
	}
	return msg
}

// firstTimes places the first violation on the run's timelines; e is the
// write that made it.
func firstTimes(d *DoubleWriterDetails, e *register.Entry, in checker.Input) {
	if in.StartWall != 0 && e.Wall != 0 {
		d.FirstViolationAfterNS = history.Int64(e.Wall - in.StartWall)
	}
	for _, h := range in.History {
		if h.F == history.FWrite && h.Type == history.OK && int(h.Process) == e.Process &&
			h.Key == e.Key && h.Value != nil && h.Value.N != nil && *h.Value.N == e.Value &&
			(!e.HasToken || (h.Value.Token != nil && *h.Value.Token == e.Token)) {
			d.FirstViolationTimeNS = history.Int64(h.Time)
			return
		}
	}
}
