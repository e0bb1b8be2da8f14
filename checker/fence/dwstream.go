package fence

import (
	"fmt"
	"maps"

	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Stream is the double-writer's rules, fed one apply-log entry at a time
// in commit order: the one implementation of them. CheckDoubleWriter is a
// Stream fed the whole log; the live progress line feeds one the log as
// the register appends it. Only accepted writes are evidence: a rejected
// write is fencing working, and reads change nothing.
//
// Memory is what the rules need and no more. Per key: its summary; three
// entries (the last accepted write, for the lost-update rule; the accepted
// write with the highest token, for token regression; the current grant's
// latest write); and one map slot per distinct grant (token, process) that
// wrote the key. A slot of a grant that another grant wrote after holds
// two entries (its last write and the write that superseded it), shared
// with the other slots, so about one entry per grant. The interleaving
// rule cannot forget a grant in an unfenced run: a holder superseded long
// ago that writes again is the violation, however long it was paused. In
// a fenced run (on, strict) it can: the register accepts a token only at
// or above its fence, which is at least the highest token accepted, so a
// grant whose token is below that can never write again, and its slot is
// dropped as soon as a higher token is accepted. That keeps a fenced soak's
// memory flat (the slots were about 0.4 MiB a minute of a 30-minute soak's
// growth); the results are the same for any log a correct register
// writes. Were the register to accept such a write anyway, token
// regression still reports it (the highest token is kept), the
// interleaving of that grant is not, and it counts as a new grant. Reads
// and rejected entries keep nothing. The entries are the caller's: Add keeps pointers
// to them, so they must not change afterwards.
type Stream struct {
	limit int
	// fenced: the register fenced the run (on, strict), so grants below
	// the highest accepted token are dropped.
	fenced bool
	d      DoubleWriterDetails
	total  int
	keys   map[string]*keyState
	// prevSeq is the last entry's Seq while Seq problems are still being
	// collected (seqFull: no more, the log is badly damaged).
	prevSeq int64
	seqFull bool
	// first is the write that made the first violation.
	first *register.Entry
}

var _ stream.Checker[*register.Entry, Violation] = (*Stream)(nil)

type grant struct {
	token   int64
	process int
}

// superseded remembers, for a grant that another grant wrote after, the
// evidence needed if it ever writes again; zero for the current grant and
// for one whose interleaving was reported (until it is superseded again).
type superseded struct {
	last *register.Entry // the grant's last write before it was superseded
	by   *register.Entry // the other grant's first write after it
}

type keyState struct {
	fenced  bool
	sum     KeySummary
	last    *register.Entry // the previous accepted write
	maxTok  *register.Entry // the accepted tokened write with the highest token
	cur     grant
	curLast *register.Entry // cur's latest write; nil before any tokened write
	grants  map[grant]superseded
}

// NewStream starts a double-writer stream that keeps the first limit
// violations as evidence (counts stay exact), for a run whose register
// was in mode fencing (register.ModeOff, ModeOn, ModeStrict; "" is read
// as off, which keeps every grant).
func NewStream(limit int, fencing string) *Stream {
	fenced := fencing == register.ModeOn || fencing == register.ModeStrict
	return &Stream{limit: limit, fenced: fenced, keys: map[string]*keyState{},
		d: DoubleWriterDetails{ViolationCounts: map[string]int{
			KindTokenRegression: 0, KindInterleavedGrants: 0, KindLostUpdate: 0},
			Violations: []Violation{}}}
}

// Name implements stream.Checker.
func (s *Stream) Name() string { return NameDoubleWriter }

// Violations is how many violations the entries so far made.
func (s *Stream) Violations() int { return s.total }

// Add judges the next entry (stream.Checker) and returns the violations
// whose last write it is.
func (s *Stream) Add(e *register.Entry) []Violation {
	s.checkSeq(e.Seq)
	s.d.Entries++
	ks := s.keys[e.Key]
	if ks == nil {
		ks = &keyState{fenced: s.fenced, grants: map[grant]superseded{}}
		s.keys[e.Key] = ks
	}
	switch {
	case e.Op != register.OpWrite && e.Accepted:
		ks.sum.AcceptedReads++
		return nil
	case e.Op != register.OpWrite:
		ks.sum.RejectedReads++
		s.d.TokenRejections++
		return nil
	case !e.Accepted:
		ks.sum.RejectedWrites++
		s.d.TokenRejections++
		return nil
	}
	ks.sum.AcceptedWrites++
	s.d.AcceptedWrites++

	// (c) lost update: every accepted write is the previous plus one.
	var found []Violation
	want := int64(1)
	if ks.last != nil {
		want = ks.last.Value + 1
	}
	if e.Value != want {
		found = append(found, lostUpdate(ks.last, e, want))
	}
	ks.last = e
	ks.sum.FinalValue = e.Value
	if !e.HasToken {
		ks.sum.UntokenedWrites++
		return s.keep(found)
	}
	return s.keep(append(found, ks.tokened(e)...))
}

// tokened applies the rules that need a grant: (a) token regression and
// (b) interleaving.
func (ks *keyState) tokened(e *register.Entry) []Violation {
	var found []Violation
	g := grant{e.Token, e.Process}
	if _, ok := ks.grants[g]; !ok {
		ks.grants[g] = superseded{}
		ks.sum.Grants++
	}

	// (a) token regression against the highest token accepted so far.
	if ks.maxTok != nil && e.Token < ks.maxTok.Token {
		found = append(found, regression(ks.maxTok, e))
	}
	raised := ks.maxTok == nil || e.Token > ks.maxTok.Token
	if raised {
		ks.maxTok = e
	}

	// (b) interleaving: once another grant has written, an earlier
	// grant's writes must be over.
	switch {
	case ks.curLast == nil:
		ks.cur = g
	case g != ks.cur:
		ks.grants[ks.cur] = superseded{last: ks.curLast, by: e}
		if sup := ks.grants[g]; sup.last != nil {
			found = append(found, interleaved(sup, e))
			ks.grants[g] = superseded{}
		}
		ks.cur = g
	}
	ks.curLast = e
	if raised {
		// After the interleaving rule, which has just recorded the
		// grant e superseded.
		ks.dropFenced()
	}
	return found
}

// dropFenced forgets, in a fenced run, the grants below the highest
// accepted token: the register refuses them from now on (see Stream). The
// map holds only grants at or above that token, so a pass is short.
func (ks *keyState) dropFenced() {
	if !ks.fenced {
		return
	}
	for g := range ks.grants {
		if g.token < ks.maxTok.Token {
			delete(ks.grants, g)
		}
	}
}

// keep counts the violations one entry made and keeps them as evidence
// while there is room.
func (s *Stream) keep(found []Violation) []Violation {
	for _, v := range found {
		s.total++
		s.d.ViolationCounts[v.Kind]++
		if s.first == nil {
			s.first = &v.Entries[len(v.Entries)-1]
			s.d.FirstViolationSeq = v.Seqs[len(v.Seqs)-1]
		}
		if len(s.d.Violations) >= s.limit {
			s.d.ViolationsOmitted++
			continue
		}
		s.d.Violations = append(s.d.Violations, v)
	}
	return found
}

// checkSeq notes what makes the log not "from 1, without gaps", giving up
// after a few so a badly damaged log does not flood the report.
func (s *Stream) checkSeq(seq int64) {
	if s.seqFull {
		return
	}
	if seq != s.prevSeq+1 {
		if seq == s.prevSeq {
			s.d.SeqProblems = append(s.d.SeqProblems, fmt.Sprintf("seq %d appears twice", seq))
		} else {
			s.d.SeqProblems = append(s.d.SeqProblems, fmt.Sprintf("seq jumps from %d to %d", s.prevSeq, seq))
		}
		if len(s.d.SeqProblems) == 10 {
			s.d.SeqProblems = append(s.d.SeqProblems, "...")
			s.seqFull = true
		}
	}
	s.prevSeq = seq
}

// Result is the evidence so far: what the apply log alone shows. The
// batch checker adds what needs the history (HistoryOKWrites, the first
// violation's times) and the verdict.
func (s *Stream) Result() DoubleWriterDetails {
	d := s.d
	d.ViolationCounts = maps.Clone(s.d.ViolationCounts)
	d.Keys = make(map[string]KeySummary, len(s.keys))
	for k, ks := range s.keys {
		d.Keys[k] = ks.sum
	}
	return d
}

func lostUpdate(prev, e *register.Entry, want int64) Violation {
	v := Violation{Kind: KindLostUpdate, Key: e.Key, Expected: history.Int64(want), Actual: history.Int64(e.Value)}
	if prev == nil {
		v.Message = fmt.Sprintf("key %s: first accepted write (seq %d, process %d, token %d) wrote %d, expected %d",
			e.Key, e.Seq, e.Process, e.Token, e.Value, want)
		fill(&v, e)
		return v
	}
	v.Message = fmt.Sprintf("key %s: write seq %d by process %d (token %d) wrote %d, expected %d after seq %d by process %d (token %d) wrote %d: an update was lost",
		e.Key, e.Seq, e.Process, e.Token, e.Value, want, prev.Seq, prev.Process, prev.Token, prev.Value)
	fill(&v, prev, e)
	return v
}

func regression(top, e *register.Entry) Violation {
	v := Violation{Kind: KindTokenRegression, Key: e.Key,
		Message: fmt.Sprintf("key %s: write seq %d by process %d with token %d was accepted after seq %d by process %d had written with the higher token %d",
			e.Key, e.Seq, e.Process, e.Token, top.Seq, top.Process, top.Token)}
	fill(&v, top, e)
	return v
}

func interleaved(s superseded, e *register.Entry) Violation {
	a, b := s.last, s.by
	v := Violation{Kind: KindInterleavedGrants, Key: e.Key,
		Message: fmt.Sprintf("key %s: grant (token %d, process %d) wrote at seq %d, then grant (token %d, process %d) wrote at seq %d, then the first grant wrote again at seq %d: two holders were writing at once",
			e.Key, a.Token, a.Process, a.Seq, b.Token, b.Process, b.Seq, e.Seq)}
	fill(&v, a, b, e)
	return v
}

// fill copies the entries into the violation: evidence must not change
// when the caller's entries do.
func fill(v *Violation, es ...*register.Entry) {
	for _, e := range es {
		v.Tokens = append(v.Tokens, e.Token)
		v.Processes = append(v.Processes, e.Process)
		v.Seqs = append(v.Seqs, e.Seq)
		v.Values = append(v.Values, e.Value)
		v.Entries = append(v.Entries, *e)
	}
}
