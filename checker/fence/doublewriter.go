package fence

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/register"
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

type grant struct {
	token   int64
	process int
}

// superseded remembers, for a grant that another grant wrote after, the
// evidence needed if it ever writes again.
type superseded struct {
	last int // index of the grant's last write before it was superseded
	by   int // index of the other grant's first write after it
}

type keyState struct {
	sum       KeySummary
	lastWrite int // index of the previous accepted write, -1 before any
	maxTok    int // index of the accepted tokened write with the highest token, -1 before any
	cur       grant
	curLast   int // index of cur's latest write, -1 before any tokened write
	old       map[grant]superseded
	seen      map[grant]struct{}
}

// CheckDoubleWriter is the exact checker over the apply log. One pass in
// commit order with constant work per entry (map lookups), so it stays
// usable on soak runs with millions of writes. Only accepted writes are
// evidence: a rejected write is fencing working, and reads change nothing.
func CheckDoubleWriter(ctx context.Context, in checker.Input) checker.Result {
	log := in.ApplyLog
	d := DoubleWriterDetails{ViolationCounts: map[string]int{
		KindTokenRegression: 0, KindInterleavedGrants: 0, KindLostUpdate: 0},
		Keys: map[string]KeySummary{}, Entries: len(log), Violations: []Violation{}}

	if !slices.IsSortedFunc(log, func(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) }) {
		log = slices.Clone(log)
		slices.SortStableFunc(log, func(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	d.SeqProblems = seqProblems(log)

	limit := in.Limit()
	add := func(v Violation) {
		d.ViolationCounts[v.Kind]++
		if d.FirstViolationSeq == 0 {
			d.FirstViolationSeq = v.Seqs[len(v.Seqs)-1]
		}
		if len(d.Violations) >= limit {
			d.ViolationsOmitted++
			return
		}
		d.Violations = append(d.Violations, v)
	}

	keys := map[string]*keyState{}
	for i := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		e := &log[i]
		ks := keys[e.Key]
		if ks == nil {
			ks = &keyState{lastWrite: -1, maxTok: -1, curLast: -1,
				old: map[grant]superseded{}, seen: map[grant]struct{}{}}
			keys[e.Key] = ks
		}
		if e.Op != register.OpWrite {
			if e.Accepted {
				ks.sum.AcceptedReads++
			} else {
				ks.sum.RejectedReads++
				d.TokenRejections++
			}
			continue
		}
		if !e.Accepted {
			ks.sum.RejectedWrites++
			d.TokenRejections++
			continue
		}
		ks.sum.AcceptedWrites++
		d.AcceptedWrites++

		// (c) lost update: every accepted write is the previous plus one.
		want := int64(1)
		if ks.lastWrite >= 0 {
			want = log[ks.lastWrite].Value + 1
		}
		if e.Value != want {
			add(lostUpdate(log, ks.lastWrite, i, want))
		}
		ks.lastWrite = i
		ks.sum.FinalValue = e.Value

		if !e.HasToken {
			ks.sum.UntokenedWrites++
			continue
		}
		g := grant{e.Token, e.Process}
		if _, ok := ks.seen[g]; !ok {
			ks.seen[g] = struct{}{}
			ks.sum.Grants++
		}

		// (a) token regression against the highest token accepted so far.
		if ks.maxTok >= 0 && e.Token < log[ks.maxTok].Token {
			add(pairViolation(KindTokenRegression, log, ks.maxTok, i,
				fmt.Sprintf("key %s: write seq %d by process %d with token %d was accepted after seq %d by process %d had written with the higher token %d",
					e.Key, e.Seq, e.Process, e.Token, log[ks.maxTok].Seq, log[ks.maxTok].Process, log[ks.maxTok].Token)))
		}
		if ks.maxTok < 0 || e.Token > log[ks.maxTok].Token {
			ks.maxTok = i
		}

		// (b) interleaving: once another grant has written, an earlier
		// grant's writes must be over.
		switch {
		case ks.curLast < 0:
			ks.cur = g
		case g != ks.cur:
			ks.old[ks.cur] = superseded{last: ks.curLast, by: i}
			if s, ok := ks.old[g]; ok {
				add(interleaved(log, s, i))
				delete(ks.old, g)
			}
			ks.cur = g
		}
		ks.curLast = i
	}

	for _, e := range in.History {
		if e.F == history.FWrite && e.Type == history.OK && e.Process != history.Nemesis {
			ks := keys[e.Key]
			if ks == nil {
				ks = &keyState{}
				keys[e.Key] = ks
			}
			ks.sum.HistoryOKWrites++
		}
	}
	var missing []string
	for k, ks := range keys {
		d.Keys[k] = ks.sum
		if ks.sum.HistoryOKWrites > ks.sum.AcceptedWrites {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)

	if d.FirstViolationSeq != 0 {
		firstTimes(&d, log, in)
	}

	var r checker.Result
	total := 0
	for _, n := range d.ViolationCounts {
		total += n
	}
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

// seqProblems finds what makes the log not "from 1, without gaps", giving
// up after a few so a badly damaged log does not flood the report.
func seqProblems(log []register.Entry) []string {
	var out []string
	prev := int64(0)
	for _, e := range log {
		if e.Seq != prev+1 {
			if e.Seq == prev {
				out = append(out, fmt.Sprintf("seq %d appears twice", e.Seq))
			} else {
				out = append(out, fmt.Sprintf("seq jumps from %d to %d", prev, e.Seq))
			}
			if len(out) == 10 {
				return append(out, "...")
			}
		}
		prev = e.Seq
	}
	return out
}

func lostUpdate(log []register.Entry, prev, i int, want int64) Violation {
	e := log[i]
	v := Violation{Kind: KindLostUpdate, Key: e.Key, Expected: history.Int64(want), Actual: history.Int64(e.Value)}
	if prev < 0 {
		v.Message = fmt.Sprintf("key %s: first accepted write (seq %d, process %d, token %d) wrote %d, expected %d",
			e.Key, e.Seq, e.Process, e.Token, e.Value, want)
		fill(&v, e)
		return v
	}
	p := log[prev]
	v.Message = fmt.Sprintf("key %s: write seq %d by process %d (token %d) wrote %d, expected %d after seq %d by process %d (token %d) wrote %d: an update was lost",
		e.Key, e.Seq, e.Process, e.Token, e.Value, want, p.Seq, p.Process, p.Token, p.Value)
	fill(&v, p, e)
	return v
}

func pairViolation(kind string, log []register.Entry, a, b int, msg string) Violation {
	v := Violation{Kind: kind, Key: log[b].Key, Message: msg}
	fill(&v, log[a], log[b])
	return v
}

func interleaved(log []register.Entry, s superseded, i int) Violation {
	a, b, e := log[s.last], log[s.by], log[i]
	v := Violation{Kind: KindInterleavedGrants, Key: e.Key,
		Message: fmt.Sprintf("key %s: grant (token %d, process %d) wrote at seq %d, then grant (token %d, process %d) wrote at seq %d, then the first grant wrote again at seq %d: two holders were writing at once",
			e.Key, a.Token, a.Process, a.Seq, b.Token, b.Process, b.Seq, e.Seq)}
	fill(&v, a, b, e)
	return v
}

func fill(v *Violation, es ...register.Entry) {
	for _, e := range es {
		v.Tokens = append(v.Tokens, e.Token)
		v.Processes = append(v.Processes, e.Process)
		v.Seqs = append(v.Seqs, e.Seq)
		v.Values = append(v.Values, e.Value)
		v.Entries = append(v.Entries, e)
	}
}

// firstTimes places the first violation on the run's timelines.
func firstTimes(d *DoubleWriterDetails, log []register.Entry, in checker.Input) {
	i, ok := slices.BinarySearchFunc(log, d.FirstViolationSeq, func(e register.Entry, s int64) int { return cmp.Compare(e.Seq, s) })
	if !ok {
		return
	}
	e := log[i]
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
