package timeline

import (
	"fmt"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
)

// Mark is one violation listed in results.json, placed in its lane: the
// element report/anchor.Violation(Checker, Index) names.
type Mark struct {
	Checker string
	// Index is the violation's index in the checker's list in
	// results.json. grant-overlap has two lists: its overlaps are 0..n-1
	// and its false releases follow, n.. (see GrantOverlapIndex).
	Index int
	// Lane is the index of the key's lane; -1 when the key has none.
	Lane int
	// At is where the mark stands on the run clock: the write that made
	// the violation, or the grant or release that did. Placed is false
	// when it cannot be placed (its write has no run-clock time).
	At     int64
	Placed bool
	// Writes are the lane's writes involved (indexes in Lane.Writes),
	// the one that made the violation last; Tenures the tenures involved
	// (indexes in Lane.Tenures).
	Writes  []int
	Tenures []int
	Text    string
}

// GrantOverlapIndex is the mark index of grant-overlap's false release j
// when the checker listed n overlaps: the overlaps come first.
func GrantOverlapIndex(n, j int) int { return n + j }

// marksOf reads the violations of the checkers whose evidence says where
// they happened: double-writer and stale-term (apply-log seqs),
// grant-overlap, token-order and wrong-token (grants and rejections on
// the run clock). A checker
// whose details cannot be decoded gives no marks; the page says so
// through the checker's own section.
func marksOf(res checker.Results, m *Model) []Mark {
	var out []Mark
	if d := decode[fence.DoubleWriterDetails](res, fence.NameDoubleWriter); d != nil {
		for i, v := range d.Violations {
			out = append(out, m.seqMark(fence.NameDoubleWriter, i, v.Key, v.Seqs, v.Message))
		}
	}
	if d := decode[election.StaleTermDetails](res, election.NameStaleTerm); d != nil {
		for i, v := range d.Violations {
			out = append(out, m.seqMark(election.NameStaleTerm, i, v.Service, []int64{v.SetBySeq, v.Seq}, v.Message))
		}
	}
	if d := decode[lock.GrantOverlapDetails](res, lock.NameGrantOverlap); d != nil {
		for i, o := range d.Overlaps {
			out = append(out, m.grantMark(lock.NameGrantOverlap, i, o.Key, o.GrantedNS, o.Message,
				grantRef{o.Holder, o.HolderTok, o.HeldFromNS, false}, grantRef{o.Intruder, o.IntruderTok, o.GrantedNS, false}))
		}
		for j, f := range d.FalseReleases {
			out = append(out, m.grantMark(lock.NameGrantOverlap, GrantOverlapIndex(len(d.Overlaps), j), f.Key, f.ReleaseNS, f.Message,
				grantRef{f.Holder, f.HolderTok, f.HeldFromNS, false}))
		}
	}
	if d := decode[lock.TokenOrderDetails](res, lock.NameTokenOrder); d != nil {
		for i, r := range d.Regressions {
			msg := fmt.Sprintf("key %s: process %d was granted token %d at %s, not above token %d granted to process %d at %s",
				r.Key, r.Processes[1], r.Tokens[1], checker.Seconds(r.TimesNS[1]), r.Tokens[0], r.Processes[0], checker.Seconds(r.TimesNS[0]))
			out = append(out, m.grantMark(lock.NameTokenOrder, i, r.Key, r.TimesNS[1], msg,
				grantRef{r.Processes[0], r.Tokens[0], r.TimesNS[0], false}, grantRef{r.Processes[1], r.Tokens[1], r.TimesNS[1], false}))
		}
	}
	if d := decode[fence.WrongTokenDetails](res, fence.NameWrongToken); d != nil {
		for i, w := range d.Violations {
			g := grantRef{process: w.Process, at: w.GrantedNS, anyToken: w.GrantToken == nil}
			if w.GrantToken != nil {
				g.token = *w.GrantToken
			}
			out = append(out, m.grantMark(fence.NameWrongToken, i, w.Key, w.RejectedNS, w.Message, g))
		}
	}
	return out
}

// decode reads checker name's details, nil when it did not run or its
// details are not of that shape.
func decode[T any](res checker.Results, name string) *T {
	r, ok := res.Checkers[name]
	if !ok || r.Details == nil {
		return nil
	}
	var d T
	if err := r.DecodeDetails(&d); err != nil {
		return nil
	}
	return &d
}

// seqMark places a violation given by apply-log seqs (the last one made
// it) at that write, with the tenures of every grant involved.
func (m *Model) seqMark(name string, i int, key string, seqs []int64, text string) Mark {
	mk := Mark{Checker: name, Index: i, Text: text}
	li, l := m.lane(key)
	mk.Lane = li
	if l == nil {
		return mk
	}
	for _, s := range seqs {
		wi := l.writeBySeq(s)
		if wi < 0 {
			continue
		}
		mk.Writes = append(mk.Writes, wi)
		w := l.Writes[wi]
		if ti := l.tenureOf(w.Process, w.Token, w.HasToken, w.At); ti >= 0 && !slices.Contains(mk.Tenures, ti) {
			mk.Tenures = append(mk.Tenures, ti)
		}
		if s == seqs[len(seqs)-1] {
			mk.At, mk.Placed = w.At, true
		}
	}
	return mk
}

// grantRef names a grant: its process, token and time.
type grantRef struct {
	process int
	token   int64
	at      int64
	// anyToken: the evidence names no token; any of the process's
	// tenures holding at the time is it.
	anyToken bool
}

// grantMark places a violation of the grants at time at, with their
// tenures.
func (m *Model) grantMark(name string, i int, key string, at int64, text string, grants ...grantRef) Mark {
	mk := Mark{Checker: name, Index: i, Text: text, At: at, Placed: true}
	li, l := m.lane(key)
	mk.Lane = li
	if l == nil {
		mk.Placed = false
		return mk
	}
	for _, g := range grants {
		if ti := l.tenureOf(g.process, g.token, !g.anyToken, g.at); ti >= 0 && !slices.Contains(mk.Tenures, ti) {
			mk.Tenures = append(mk.Tenures, ti)
		}
	}
	return mk
}
