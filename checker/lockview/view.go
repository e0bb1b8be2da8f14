// Package lockview is the history of the lock workload as the exact lock
// checkers read it: worker operations with their invocation and
// completion paired, the instant events (session, lost, late) apart, and
// the nemesis' fault windows. It is shared by checker/lock,
// checker/fence and checker/config (whose workload pairs the same way),
// so that all read the history the same way.
package lockview

import (
	"strings"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// Op is one worker operation of the lock workload with its invocation and
// completion paired.
type Op struct {
	Process history.Process
	F       string
	Key     string
	Invoke  int64 // run clock, ns
	// Done is the completion time; Type is "" when the history ends before
	// the completion (an open operation, which Jepsen reads as info).
	Done int64
	Type history.Type
	// Value is the completion's value, the invocation's while the
	// completion has none; Invoked is always the invocation's (an
	// operation's arguments, such as an update's expected version).
	Value   *history.Value
	Invoked *history.Value
	Error   string
	// Index is the completion's index in the history (the invocation's
	// while there is none), to point at the evidence.
	Index int64
}

// Instant is an instant event of a worker (session, lost, late).
type Instant struct {
	Process history.Process
	F       string
	Key     string
	Time    int64
	Value   *history.Value
	// Index is the event's index in the history.
	Index int64
}

// Gone is the nemesis' observation that a worker's session no longer
// exists on the servers (history.FSessionGone): it ended after LastSeenNS
// (when it was last seen alive) and at or before Time.
type Gone struct {
	Process    history.Process
	Session    string
	LastSeenNS int64
	Time       int64
}

// View is the history split for the lock checkers.
type View struct {
	Ops      []Op
	Instants []Instant
	Gone     []Gone
	// Faults are the nemesis' fault windows (checker.FaultWindows); a
	// fault never undone lasts to End.
	Faults []checker.FaultWindow
	End    int64
}

// Of pairs operations per process. Instant events are recorded while
// the same process may have an operation in flight, so they never pair with
// it. Nemesis operations become fault windows (checker.FaultWindows).
func Of(h []history.Event) View {
	// Most events are one half of an operation: room for them all at once
	// saves the copies of a growing slice (most of the pairing's time).
	v := View{Ops: make([]Op, 0, len(h)/2+1)}
	var open openOps
	for _, e := range h {
		v.End = max(v.End, e.Time)
		if e.Process == history.Nemesis {
			if g, ok := goneOf(e); ok {
				v.Gone = append(v.Gone, g)
			}
			continue
		}
		if checker.IsInstant(e.F) {
			if e.Type == history.OK {
				v.Instants = append(v.Instants, instantOf(e))
			}
			continue
		}
		if e.Type == history.Invoke {
			open.set(e.Process, len(v.Ops))
			v.Ops = append(v.Ops, opOf(e))
			continue
		}
		i, ok := open.take(e.Process)
		if !ok {
			continue
		}
		complete(&v.Ops[i], e)
	}
	v.Faults = checker.FaultWindows(h)
	for i := range v.Faults {
		if v.Faults[i].To < 0 {
			v.Faults[i].To = v.End
		}
	}
	return v
}

// openOps is each process's open operation (its place in View.Ops): in
// a slice for the small non-negative process numbers workers have, a map
// for any other (hashing per event was a fifth of the pairing's time).
type openOps struct {
	small []int // place + 1; 0: none
	other map[history.Process]int
}

const smallProcesses = 1 << 16

func (o *openOps) set(p history.Process, i int) {
	if p >= 0 && p < smallProcesses {
		if int(p) >= len(o.small) {
			o.small = append(o.small, make([]int, int(p)+1-len(o.small))...)
		}
		o.small[p] = i + 1
		return
	}
	if o.other == nil {
		o.other = map[history.Process]int{}
	}
	o.other[p] = i
}

// take is p's open operation, which is no longer open.
func (o *openOps) take(p history.Process) (int, bool) {
	if p >= 0 && p < smallProcesses {
		if int(p) >= len(o.small) || o.small[p] == 0 {
			return 0, false
		}
		i := o.small[p] - 1
		o.small[p] = 0
		return i, true
	}
	i, ok := o.other[p]
	delete(o.other, p)
	return i, ok
}

// Token is the fencing token the operation's value carries.
func (o Op) Token() (int64, bool) {
	if o.Value == nil || o.Value.Token == nil {
		return 0, false
	}
	return *o.Value.Token, true
}

// goneOf reads a session-gone observation; one without a target process
// or a last-seen time cannot be placed and is left out.
func goneOf(e history.Event) (Gone, bool) {
	v := e.Value
	if e.F != history.FSessionGone || e.Type != history.OK || v == nil || v.TargetProcess == nil || v.LastSeenNS == nil {
		return Gone{}, false
	}
	return Gone{Process: history.Process(*v.TargetProcess), Session: v.Session, LastSeenNS: *v.LastSeenNS, Time: e.Time}, true
}

// SameSession compares session ids as workers and the nemesis write them
// (hex, with or without 0x, any case, leading zeros or not); an empty id
// is unknown and matches nothing.
func SameSession(a, b string) bool {
	na, nb := normSession(a), normSession(b)
	return na != "" && na == nb
}

func normSession(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "0x")
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return ""
	}
	return s
}

// Session states and lost reasons the checkers read (docs/worker-protocol.md).
const (
	StateConnected      = "connected"
	StateExpired        = "expired"
	StateSessionChanged = "session-changed"
	// StateClosed: the worker closed the session itself; it ends the
	// session and its grants, and excuses nothing.
	StateClosed = "closed"
)

// Session is what a worker's own session events say about the session
// it was in at some moment: ID, or "" when the history does not say (a
// worker's first session is announced in hello, which the history does
// not record), and the sessions known to have ended by then (reported
// expired, or replaced by another connected session), which it cannot
// have been in.
type Session struct {
	ID    string
	ended map[string]bool
}

// May says whether session id may be this one: the same id when known,
// else any session not known to have ended; an unnamed id may be any.
func (s Session) May(id string) bool {
	switch {
	case normSession(id) == "":
		return true
	case s.ID != "":
		return SameSession(id, s.ID)
	}
	return !s.ended[normSession(id)]
}

// SessionAt is the session worker process p was in at t, by its session
// events up to t: its last "connected", unless that one was reported
// expired or closed since.
func (v View) SessionAt(p history.Process, t int64) Session {
	s := Session{ended: map[string]bool{}}
	for _, e := range v.Instants {
		if e.Time <= t && e.Process == p && e.F == history.FSession && e.Value != nil {
			s.apply(e)
		}
	}
	return s.settled()
}

// LossReported finds the first session loss worker process p reported
// itself, at from <= t < to: a lost event for key with reason expired or
// session-changed (for session, when it names one), or a session event
// "expired" that may be for session. A session the worker closed itself
// is no loss.
func (v View) LossReported(p history.Process, key string, session Session, from, to int64) (Instant, bool) {
	for _, e := range v.Instants {
		if e.Process == p && e.Time >= from && e.Time < to && e.Value != nil && isLoss(e, key, session) {
			return e, true
		}
	}
	return Instant{}, false
}

// GoneBefore finds an observation, at or after from, that session of
// worker process p was gone from the servers, that may have ended before
// t (it was last seen alive before t).
func (v View) GoneBefore(p history.Process, session Session, from, t int64) (Gone, bool) {
	return v.gone(p, session, func(g Gone) bool { return g.Time >= from && g.LastSeenNS < t })
}

// GoneBy finds an observation, between from and t (both included), that
// session of worker process p was gone from the servers.
func (v View) GoneBy(p history.Process, session Session, from, t int64) (Gone, bool) {
	return v.gone(p, session, func(g Gone) bool { return g.Time >= from && g.Time <= t })
}

func (v View) gone(p history.Process, session Session, when func(Gone) bool) (Gone, bool) {
	for _, g := range v.Gone {
		if g.Process == p && session.May(g.Session) && when(g) {
			return g, true
		}
	}
	return Gone{}, false
}

// Clone is a copy of s that later answers of an Index cannot change (an
// Index's SessionAt shares its state until the next call).
func (s Session) Clone() Session {
	c := Session{ID: s.ID, ended: make(map[string]bool, len(s.ended))}
	for k, v := range s.ended {
		c.ended[k] = v
	}
	return c
}
