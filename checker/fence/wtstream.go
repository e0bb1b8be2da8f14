package fence

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// WrongTokenStream is the wrong-token rules fed the history one paired
// event at a time (lockview.Pairer); CheckWrongToken is the stream fed
// the whole history. A rejection is judged when it is answered (once the
// clock has passed its grant's answer): everything the rules read
// happened before it, but for one thing, a session-gone observation,
// which the rule accepts at any later time and which turns a newer grant
// or a wrong token into a loss. So a wrong token is reported once no
// fault that started before the rejection is still in effect
// (lockview.Quiet), and at Finish in any case.
//
// Memory: per process and key, its grant; per key, the grants since the
// oldest one still held (a holder retired with its grant keeps them all,
// unless ForgetRetired); per process, its session, lost and session-gone
// events; and every rejection a later observation could still explain
// otherwise (a holder's rejections explained by a newer grant, and the
// wrong tokens): one small record each, growing with those rejections,
// not with the operations. In deferred mode (a history whose clock goes
// back) the rejections are judged at Finish.
type WrongTokenStream struct {
	limit    int
	mode     string
	deferred bool
	retire   bool // ForgetRetired
	obs      *lockview.Observations
	now      int64
	holds    map[holdKey]*held
	grants   map[string]*grantsOf
	openW    map[history.Process]*held // the hold of a write still in flight
	due      []*rejection
	judged   map[history.Process][]*rejection // those a later observation could still explain
	waiting  []*rejection                     // wrong tokens not yet reported
	found    []*rejection                     // every wrong token, explained since or not
	d        WrongTokenDetails
}

type holdKey struct {
	p   history.Process
	key string
}

// held is a process's grant of a key and whether it wrote under it.
type held struct {
	grant *lockview.Op
	wrote bool
	// stale: a grant of the key with a higher token was recorded before
	// this one (ExplainedStaleGrant).
	stale bool
}

// grantsOf are a key's grants by answer time, and the answer times of the
// grants still held (what a rejection may still be compared with).
type grantsOf struct {
	list    []*lockview.Op
	kept    int
	holders map[history.Process]int64
	// maxTok is the highest token of the key's grants recorded so far
	// (seen: there was one), for stale grants.
	maxTok int64
	seen   bool
}

// rejection is a holder's rejection, judged or waiting to be. Once
// judged it keeps the times it needs, not the operations (which would
// keep their neighbours in memory: lockview.Pairer makes them in slabs).
type rejection struct {
	o, grant    *lockview.Op // until judged
	key         string
	done, gDone int64
	wrote       bool
	stale       bool
	rank        int64
	session     lockview.Session
	why         string // "" for a wrong token
	v           WrongToken
}

var _ stream.Checker[*lockview.Item, stream.Found] = (*WrongTokenStream)(nil)

// NewWrongTokenStream judges the rejections of a run fenced in mode
// (register.ModeStrict explains a second write under one grant) and keeps
// the first limit wrong tokens as evidence; deferred judges only at
// Finish.
func NewWrongTokenStream(limit int, mode string, deferred bool) *WrongTokenStream {
	return &WrongTokenStream{limit: limit, mode: mode, deferred: deferred, obs: lockview.NewObservations(),
		holds: map[holdKey]*held{}, grants: map[string]*grantsOf{}, openW: map[history.Process]*held{},
		judged: map[history.Process][]*rejection{},
		d:      WrongTokenDetails{Explained: map[string]int{}, Violations: []WrongToken{}}}
}

// ForgetRetired lets the stream take a process whose operation completed
// info as retired: it invokes nothing more (a run's runner retires it and
// a fresh process id takes its slot, docs/architecture.md "`client/`";
// only a hand-made history breaks that, so the batch does not assume it).
// The key's grant list is read only to judge a rejection, a read or write
// answered to the grant's holder itself; a retired holder makes no more
// reads or writes, so its grants held at retirement will never be compared
// with anything, and they stop pinning the list (without this a holder
// retired with an open grant keeps every later grant of its key for the
// rest of a soak). A rejection already made keeps its grant's times and is
// judged as before; the grants it is compared with are those answered
// after its grant, which the grants of other holders still pin until it is
// judged (pruning waits while any rejection is due). Once a retired
// process has no rejection left to judge, the index forgets its session
// events: only the holder's own events are read to judge its rejection.
func (s *WrongTokenStream) ForgetRetired() { s.retire = true }

// Name implements stream.Checker.
func (s *WrongTokenStream) Name() string { return NameWrongToken }

// Add implements stream.Checker: the wrong tokens that are certain once
// this event is in.
func (s *WrongTokenStream) Add(it *lockview.Item) []stream.Found {
	if t := it.Event.Time; t < s.now {
		s.deferred = true
	} else {
		s.now = t
	}
	switch {
	case s.obs.Observe(it):
		if it.Kind == lockview.ItemGone {
			s.explainLater(it.Gone)
		}
	case it.Kind == lockview.ItemInvoke:
		s.invoked(it.Op)
	case it.Kind == lockview.ItemDone:
		s.done(it)
		if s.retire && it.Op.Type == history.Info {
			s.retired(it.Op.Process)
		}
	}
	if s.deferred {
		return nil
	}
	s.judgeDue(s.now)
	return s.report(s.obs.Quiet.Since())
}

// invoked applies what an invocation does to the process's holds: an
// acquire or release ends its grant of the key, whatever its answer; a
// write in flight that another invocation replaced never completes and
// counts as written.
func (s *WrongTokenStream) invoked(o *lockview.Op) {
	if h := s.openW[o.Process]; h != nil {
		h.wrote = true
		delete(s.openW, o.Process)
	}
	k := holdKey{o.Process, o.Key}
	switch o.F {
	case history.FAcquire, history.FRelease:
		s.unhold(k)
	case history.FWrite:
		if h := s.holds[k]; h != nil {
			s.openW[o.Process] = h
		}
	}
}

func (s *WrongTokenStream) unhold(k holdKey) {
	if s.holds[k] == nil {
		return
	}
	delete(s.holds, k)
	delete(s.grants[k.key].holders, k.p)
}

// done reads a completed operation: a grant, or a read or write that the
// register rejected.
func (s *WrongTokenStream) done(it *lockview.Item) {
	o := it.Op
	k := holdKey{o.Process, o.Key}
	if o.F == history.FAcquire && o.Type == history.OK {
		g := s.grants[o.Key]
		if g == nil {
			g = &grantsOf{holders: map[history.Process]int64{}}
			s.grants[o.Key] = g
		}
		g.add(o, !s.deferred && len(s.due) == 0)
		stale := false
		if tok, ok := o.Token(); ok {
			stale = g.seen && g.maxTok > tok
			if !g.seen || tok > g.maxTok {
				g.maxTok, g.seen = tok, true
			}
		}
		s.holds[k] = &held{grant: o, stale: stale}
		g.holders[o.Process] = o.Done
		return
	}
	if o.F != history.FRead && o.F != history.FWrite {
		return
	}
	h := s.holds[k]
	if rejected(*o) {
		s.d.Rejections++
		r := &rejection{o: o, rank: it.Rank, key: o.Key, done: o.Done}
		if h != nil {
			r.grant, r.wrote, r.gDone, r.stale = h.grant, h.wrote, h.grant.Done, h.stale
		}
		s.due = append(s.due, r)
	}
	if o.F == history.FWrite {
		delete(s.openW, o.Process)
		if h != nil && (o.Type != history.Fail || rejected(*o)) {
			h.wrote = true // it reached (or may have reached) the register
		}
	}
}

// retired forgets the grants p holds: nothing will be compared with
// them (ForgetRetired).
func (s *WrongTokenStream) retired(p history.Process) {
	for k := range s.holds {
		if k.p == p {
			s.unhold(k)
		}
	}
	delete(s.openW, p)
	s.obs.Retire(p)
	s.obs.ForgetRetired(s.busy, nil)
}

// busy says whether p has a rejection still to judge; once it does not, a
// retired p's events are forgotten (ForgetRetired).
func (s *WrongTokenStream) busy(p history.Process) bool {
	return slices.ContainsFunc(s.due, func(r *rejection) bool { return r.o.Process == p })
}

// add files a grant by answer time and, when prune, forgets those no
// rejection to come can be compared with (answered before every grant
// still held).
func (g *grantsOf) add(o *lockview.Op, prune bool) {
	g.list = append(g.list, o)
	for i := len(g.list) - 1; i > 0 && g.list[i-1].Done > g.list[i].Done; i-- {
		g.list[i-1], g.list[i] = g.list[i], g.list[i-1]
	}
	if !prune || len(g.list) < 2*g.kept+64 {
		return
	}
	oldest := int64(math.MaxInt64)
	for _, t := range g.holders {
		oldest = min(oldest, t)
	}
	n := sort.Search(len(g.list), func(i int) bool { return g.list[i].Done >= oldest })
	g.list = append(g.list[:0], g.list[n:]...)
	g.kept = len(g.list)
}

// judgeDue judges the rejections whose grant was answered before now.
func (s *WrongTokenStream) judgeDue(now int64) {
	n := 0
	for _, r := range s.due {
		if r.grant != nil && r.grant.Done >= now {
			s.due[n] = r
			n++
			continue
		}
		s.judge(r)
	}
	judged := n < len(s.due)
	clear(s.due[n:])
	s.due = s.due[:n]
	if judged && s.obs.Retiring() {
		s.obs.ForgetRetired(s.busy, nil)
	}
}

// judge explains a rejection or records it as a wrong token.
func (s *WrongTokenStream) judge(r *rejection) {
	o := r.o
	switch {
	case r.grant == nil:
		r.why = ExplainedNotHolding
	case s.mode == register.ModeStrict && o.F == history.FWrite && r.wrote:
		r.why = ExplainedStrictSecond
	case r.stale:
		r.why = ExplainedStaleGrant
	default:
		r.session = s.obs.Index.SessionAt(r.grant.Process, r.grant.Done).Clone()
		r.why = s.explain(r)
	}
	if r.why == "" {
		r.v = wrongToken(r.grant, o)
	}
	r.o, r.grant = nil, nil
	if r.why != "" {
		s.d.Explained[r.why]++
		if r.why == ExplainedNewerGrant {
			s.judged[o.Process] = append(s.judged[o.Process], r)
		}
		return
	}
	s.d.ViolationCount++
	s.found = append(s.found, r)
	s.waiting = append(s.waiting, r)
	s.judged[o.Process] = append(s.judged[o.Process], r)
}

// explain says why a holder's rejection is no fault of its token, or ""
// when nothing does: a loss of the lock or of the session after the grant,
// or a grant of the key to another process between the holder's grant and
// the rejection's answer.
func (s *WrongTokenStream) explain(r *rejection) string {
	g, o := r.grant, r.o
	if s.obs.Index.LostKey(o.Process, o.Key, g.Done, o.Done) {
		return ExplainedLost
	}
	if _, ok := s.obs.Index.LossReported(g.Process, g.Key, r.session, g.Done, o.Done); ok {
		return ExplainedLost
	}
	if s.obs.Index.EarliestGoneBefore(g.Process, r.session, g.Done) < o.Done {
		return ExplainedLost
	}
	gs := s.grants[o.Key].list
	lo := sort.Search(len(gs), func(i int) bool { return gs[i].Done > g.Done })
	for _, b := range gs[lo:] {
		if b.Done >= o.Done {
			break
		}
		if b.Process != o.Process {
			return ExplainedNewerGrant
		}
	}
	return ""
}

// explainLater applies a session-gone observation to the rejections
// judged before it: one of a grant it may end (made after the grant, in a
// session it may be, last seen before the rejection) was a loss.
func (s *WrongTokenStream) explainLater(g lockview.Gone) {
	rs := s.judged[g.Process]
	n := 0
	for _, r := range rs {
		if g.Time >= r.gDone && g.LastSeenNS < r.done && r.session.May(g.Session) {
			s.relabel(r)
			continue
		}
		rs[n] = r
		n++
	}
	clear(rs[n:])
	s.judged[g.Process] = rs[:n]
}

// relabel makes a rejection explained by a loss.
func (s *WrongTokenStream) relabel(r *rejection) {
	if r.why == "" {
		s.d.ViolationCount--
	} else if s.d.Explained[r.why]--; s.d.Explained[r.why] == 0 {
		delete(s.d.Explained, r.why)
	}
	r.why = ExplainedLost
	s.d.Explained[ExplainedLost]++
}

// report returns the wrong tokens that our nemesis can no longer explain:
// no fault that started before the rejection is still in effect (since:
// lockview.Quiet.Since).
func (s *WrongTokenStream) report(since int64) []stream.Found {
	var found []stream.Found
	n := 0
	for _, r := range s.waiting {
		switch {
		case r.why != "":
		case r.done > since:
			s.waiting[n] = r
			n++
		default:
			found = append(found, stream.Found{Key: r.key, TimeNS: r.done, Message: r.v.Message})
		}
	}
	clear(s.waiting[n:])
	s.waiting = s.waiting[:n]
	return found
}

// Finish judges what waits and reports every wrong token not yet
// reported: the history is over.
func (s *WrongTokenStream) Finish() []stream.Found {
	s.judgeDue(math.MaxInt64)
	return s.report(math.MaxInt64)
}

// Result is the evidence so far, listed as the batch lists it: the first
// limit wrong tokens in the order of their invocation.
func (s *WrongTokenStream) Result() WrongTokenDetails {
	d := s.d
	d.Explained = maps.Clone(s.d.Explained)
	d.Violations = []WrongToken{}
	slices.SortStableFunc(s.found, func(a, b *rejection) int { return cmp.Compare(a.rank, b.rank) })
	n := 0
	for _, r := range s.found {
		if r.why != "" {
			continue
		}
		s.found[n] = r
		n++
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, r.done)
		if len(d.Violations) < s.limit {
			d.Violations = append(d.Violations, r.v)
		}
	}
	clear(s.found[n:])
	s.found = s.found[:n]
	d.ViolationsOmitted = d.ViolationCount - len(d.Violations)
	return d
}
