package lockview

import (
	"sort"

	"github.com/zkchaos/zkchaos/history"
)

// Index answers the View's per-process session questions (SessionAt,
// LossReported, GoneBefore, GoneBy) with the same answers, from each
// process's own events sorted by time, so that a checker asking them for
// every grant stays n log n instead of scanning the whole history each
// time (docs/measurements.md "Checker speed").
type Index struct {
	procs map[history.Process]*procIndex
	// forgotten are the processes Forget dropped, whose later events are
	// not indexed.
	forgotten map[history.Process]bool
}

type procIndex struct {
	// sessions are the process's session events with a value, in
	// history order; monotone says their times never decrease, which
	// lets At replay them incrementally.
	sessions []Instant
	monotone bool
	cur      Session // the state after sessions[:next]
	next     int
	// losses are its lost and session events with a value, and gone the
	// nemesis' observations of its sessions, each sorted by time (stable:
	// history order among equal times), with their history rank.
	losses []ranked[Instant]
	gone   []ranked[Gone]
	// lost are its lost events, with a value or not, sorted by time.
	lost []ranked[Instant]
}

type ranked[T any] struct {
	t    int64
	rank int
	e    T
}

// NewIndex is an empty index, for a streaming checker to grow with
// AddInstant and AddGone as the history is written.
func NewIndex() *Index {
	return &Index{procs: map[history.Process]*procIndex{}, forgotten: map[history.Process]bool{}}
}

// Forget drops p's events and ignores those that come later, for a
// streaming checker that will ask nothing more about p (a retired process
// whose grants are all judged): the index then grows with the processes a
// checker may still ask about, not with every process of a soak. Asked
// about p after Forget, the index answers as for a process with no events.
func (x *Index) Forget(p history.Process) {
	delete(x.procs, p)
	x.forgotten[p] = true
}

// Procs is how many processes the index keeps events of, for the memory
// tests of the streams that Forget.
func (x *Index) Procs() int { return len(x.procs) }

// addInstant appends a session or lost event (others are not indexed);
// rank is its place among the history's instants.
func (x *Index) addInstant(e Instant, rank int) bool {
	if x.forgotten[e.Process] {
		return false
	}
	if e.F == history.FLost {
		pi := x.proc(e.Process)
		pi.lost = append(pi.lost, ranked[Instant]{e.Time, rank, e})
	}
	if e.Value == nil || (e.F != history.FSession && e.F != history.FLost) {
		return false
	}
	pi := x.proc(e.Process)
	if e.F == history.FSession {
		pi.sessions = append(pi.sessions, e)
	}
	pi.losses = append(pi.losses, ranked[Instant]{e.Time, rank, e})
	return true
}

// AddInstant indexes the next instant event in history order, rank its
// place among the instants: the answers are the View's once every
// instant is added. Memory grows with a process's session and
// lost events (a few per connection), never with its operations.
func (x *Index) AddInstant(e Instant, rank int) {
	indexed := x.addInstant(e, rank)
	pi := x.procs[e.Process]
	if pi == nil {
		return // forgotten
	}
	if e.F == history.FLost {
		settleLast(pi.lost)
	}
	if !indexed {
		return
	}
	if n := len(pi.sessions); e.F == history.FSession && n > 1 && pi.sessions[n-2].Time > e.Time {
		pi.monotone = false
	}
	settleLast(pi.losses)
}

// AddGone indexes the nemesis' next session-gone observation in history
// order, rank its place among them.
func (x *Index) AddGone(g Gone, rank int) {
	if x.forgotten[g.Process] {
		return
	}
	pi := x.proc(g.Process)
	pi.gone = append(pi.gone, ranked[Gone]{g.Time, rank, g})
	settleLast(pi.gone)
}

// settleLast moves the last entry of s back to its place in time order
// (after the entries of its time): s stays sorted by time, stable.
func settleLast[T any](s []ranked[T]) {
	for i := len(s) - 1; i > 0 && s[i-1].t > s[i].t; i-- {
		s[i-1], s[i] = s[i], s[i-1]
	}
}

func (x *Index) proc(p history.Process) *procIndex {
	pi := x.procs[p]
	if pi == nil {
		pi = &procIndex{monotone: true, cur: Session{ended: map[string]bool{}}}
		x.procs[p] = pi
	}
	return pi
}

// SessionAt is View.SessionAt. The Session returned may share state with
// the index: it is valid until the next call of SessionAt for p.
func (x *Index) SessionAt(p history.Process, t int64) Session {
	pi := x.procs[p]
	if pi == nil {
		return Session{ended: map[string]bool{}}
	}
	if !pi.monotone {
		return replay(pi.sessions, t)
	}
	n := sort.Search(len(pi.sessions), func(i int) bool { return pi.sessions[i].Time > t })
	if n < pi.next {
		pi.cur, pi.next = Session{ended: map[string]bool{}}, 0
	}
	for ; pi.next < n; pi.next++ {
		pi.cur.apply(pi.sessions[pi.next])
	}
	return pi.cur.settled()
}

// replay is SessionAt over one process's session events.
func replay(sessions []Instant, t int64) Session {
	s := Session{ended: map[string]bool{}}
	for _, e := range sessions {
		if e.Time <= t {
			s.apply(e)
		}
	}
	return s.settled()
}

// apply is one session event's effect on the session it reports.
func (s *Session) apply(e Instant) {
	id := normSession(e.Value.Session)
	switch e.Value.State {
	case StateConnected:
		if s.ID != "" && normSession(s.ID) != id {
			s.ended[normSession(s.ID)] = true
		}
		s.ID = e.Value.Session
	case StateExpired, StateClosed:
		if id != "" {
			s.ended[id] = true
		}
		if id == "" || SameSession(s.ID, e.Value.Session) {
			s.ID = ""
		}
	}
}

// settled is the session once its replay is over: one known to have
// ended is unknown.
func (s Session) settled() Session {
	if s.ended[normSession(s.ID)] {
		s.ID = ""
	}
	return s
}

// LossReported is View.LossReported.
func (x *Index) LossReported(p history.Process, key string, session Session, from, to int64) (Instant, bool) {
	pi := x.procs[p]
	if pi == nil {
		return Instant{}, false
	}
	best := -1
	var found Instant
	for _, r := range window(pi.losses, from, to-1) {
		if (best < 0 || r.rank < best) && isLoss(r.e, key, session) {
			best, found = r.rank, r.e
		}
	}
	return found, best >= 0
}

// FirstLoss is the time of the earliest loss LossReported would find at
// or after from and before to, or to when there is none: LossReported(p,
// key, session, from, b) finds one exactly when b > FirstLoss.
func (x *Index) FirstLoss(p history.Process, key string, session Session, from, to int64) int64 {
	pi := x.procs[p]
	if pi == nil {
		return to
	}
	for _, r := range window(pi.losses, from, to-1) {
		if isLoss(r.e, key, session) {
			return r.t
		}
	}
	return to
}

func isLoss(e Instant, key string, session Session) bool {
	switch {
	case e.F == history.FLost && e.Key == key && (e.Value.State == StateExpired || e.Value.State == StateSessionChanged):
		return session.May(e.Value.Session)
	case e.F == history.FSession && e.Value.State == StateExpired:
		return session.May(e.Value.Session)
	}
	return false
}

// window is the entries of s (sorted by time) with from <= t <= to.
func window[T any](s []ranked[T], from, to int64) []ranked[T] {
	lo := sort.Search(len(s), func(i int) bool { return s[i].t >= from })
	hi := sort.Search(len(s), func(i int) bool { return s[i].t > to })
	if lo >= hi {
		return nil
	}
	return s[lo:hi]
}

// EarliestGoneBefore is the smallest last-seen time of the observations
// GoneBefore(p, session, from, t) may find, whatever t: GoneBefore finds
// one exactly when t > EarliestGoneBefore. It is max int64 when there is
// none.
func (x *Index) EarliestGoneBefore(p history.Process, session Session, from int64) int64 {
	out := int64(1<<63 - 1)
	pi := x.procs[p]
	if pi == nil {
		return out
	}
	lo := sort.Search(len(pi.gone), func(i int) bool { return pi.gone[i].t >= from })
	for _, r := range pi.gone[lo:] {
		if session.May(r.e.Session) {
			out = min(out, r.e.LastSeenNS)
		}
	}
	return out
}

// GoneBy is View.GoneBy.
func (x *Index) GoneBy(p history.Process, session Session, from, t int64) (Gone, bool) {
	pi := x.procs[p]
	if pi == nil {
		return Gone{}, false
	}
	best := -1
	var found Gone
	for _, r := range window(pi.gone, from, t) {
		if (best < 0 || r.rank < best) && session.May(r.e.Session) {
			best, found = r.rank, r.e
		}
	}
	return found, best >= 0
}

// LostKey says whether process p reported a lost event for key (any
// reason, with a value or not) at from <= t < to.
func (x *Index) LostKey(p history.Process, key string, from, to int64) bool {
	pi := x.procs[p]
	if pi == nil {
		return false
	}
	for _, r := range window(pi.lost, from, to-1) {
		if r.e.Key == key {
			return true
		}
	}
	return false
}
