package linear

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/register"
)

// Infinity is the return time of an operation that completed with info (or
// never completed): it may take effect at any moment after its invocation,
// or never, so it is concurrent with everything that follows. This is what
// porcupine's author recommends for crashed operations and what etcd's
// robustness tests do.
const Infinity int64 = math.MaxInt64

// opStatus is how an operation ended, as the models need it.
type opStatus uint8

const (
	stOK opStatus = iota
	// stRejected: the register answered and refused (a token rejection).
	stRejected
	// stFailed: a definite failure other than a register rejection.
	stFailed
	// stInfo: unknown, the operation may or may not have taken effect.
	stInfo
)

// partition is the operations of one key for one model, with the
// annotations that explain what was left out of it.
type partition struct {
	key   string
	ops   []porcupine.Operation
	notes []porcupine.Annotation
	// clients maps a logical process (after retirement, see procs) to its
	// dense row in this partition's visualisation.
	clients map[int]int
	info    int
	from    int64 // first invocation
	to      int64 // last finite completion
}

func (p *partition) client(proc int) int {
	id, ok := p.clients[proc]
	if !ok {
		id = len(p.clients)
		p.clients[proc] = id
	}
	return id
}

// opMeta is shown in the visualisation's tooltip, so a box can be traced
// back to history.jsonl; it is formatted only when a page is written.
type opMeta struct {
	Process history.Process
	Invoke  int64
	// Complete is the completion's index, -1 when there was none.
	Complete int64
	Error    string
	Note     string
}

func (m opMeta) String() string {
	s := fmt.Sprintf("process %s, history index %d", m.Process, m.Invoke)
	if m.Complete >= 0 {
		s += fmt.Sprintf("..%d", m.Complete)
	} else {
		s += ", never completed"
	}
	if m.Error != "" {
		s += ": " + m.Error
	}
	if m.Note != "" {
		s += " (" + m.Note + ")"
	}
	return s
}

func describeMeta(m any) string {
	if mm, ok := m.(opMeta); ok {
		return mm.String()
	}
	return ""
}

func metaOf(inv, c history.Event) opMeta {
	return opMeta{Process: inv.Process, Invoke: inv.Index, Complete: c.Index, Error: c.Error}
}

func (p *partition) add(proc int, call, ret int64, in, out any, meta opMeta) {
	if ret < call {
		ret = call
	}
	if len(p.ops) == 0 || call < p.from {
		p.from = call
	}
	if ret != Infinity && ret > p.to {
		p.to = ret
	}
	if ret == Infinity {
		p.info++
	}
	p.ops = append(p.ops, porcupine.Operation{ClientId: p.client(proc), Input: in, Call: call, Output: out, Return: ret, Metadata: meta})
}

func (p *partition) note(proc int, at int64, desc, details string) {
	p.notes = append(p.notes, porcupine.Annotation{ClientId: p.client(proc), Start: at, End: at,
		Description: desc, Details: details, BackgroundColor: "#eeeeee"})
}

// linHistory is the history cut into the two models' partitions.
type linHistory struct {
	register map[string]*partition
	mutex    map[string]*partition
	// global annotations: nemesis windows and session events.
	nemesis  []porcupine.Annotation
	sessions []porcupine.Annotation
	// Excluded counts operations left out of the models, by reason.
	excluded map[string]int
	// unmatched counts completions without an invocation.
	unmatched int
	// procs names the logical processes for the visualisation.
	procs map[int]history.Process
	// lates counts the info operations whose late response was used.
	lates int
}

// grantKey identifies what a logical process holds.
type grantKey struct {
	proc int
	key  string
}

// grantState is what the history says a process holds on a key: the token
// of its grant and the last register value it observed under it.
type grantState struct {
	token   int64
	base    int64
	hasBase bool
}

// splitHistory pairs invocations with completions and turns them into the
// register and mutex partitions. It never fails: events it cannot use are
// counted in excluded, so an odd history gives a verdict on what it does
// hold rather than an error.
//
// Process retirement: a process whose operation completed with info (or
// never completed) is retired; the runner never gives its number to a new
// operation, but the retired worker still reports instant events (lost,
// session, late) under it, and those belong to it. A malformed history
// that does reuse a retired number for a new operation gets a fresh
// logical process, so no logical process ever has two operations open.
//
// A retired process that still held a lock and never said it lost it gets
// an implicit release of type info, invoked when it was last heard from:
// the runner closes a retired worker's stdin, and the worker then releases
// and exits (or its session expires), at a time the history does not
// record.
func splitHistory(events []history.Event) *linHistory {
	h := &linHistory{register: map[string]*partition{}, mutex: map[string]*partition{}, excluded: map[string]int{}}
	s := splitter{h: h, ids: map[lkey]int{}, hproc: map[int]history.Process{}, gen: map[history.Process]int{}, retired: map[int]bool{},
		open: map[openKey]history.Event{}, grants: map[grantKey]grantState{}, lastSeen: map[int]int64{},
		unknown: map[int]pendingOp{}}
	h.procs = s.hproc
	for _, e := range events {
		s.event(e)
	}
	for k, o := range s.open {
		s.complete(o, k.proc, neverCompleted)
	}
	for lp, o := range s.unknown {
		h.complete(s.part, s.grants, o.inv, lp, o.c, &o)
	}
	for gk := range s.grants {
		if s.retired[gk.proc] {
			s.part(h.mutex, gk.key).add(gk.proc, s.lastSeen[gk.proc], Infinity,
				mutexIn{Op: mRelease, Proc: gk.proc, Implicit: true}, mutexOut{Status: stInfo},
				opMeta{Process: s.hproc[gk.proc], Invoke: -1, Complete: -1, Note: "implicit release of a retired holder"})
		}
	}
	for _, w := range checker.FaultWindows(events) {
		h.nemesis = append(h.nemesis, faultNote(w))
	}
	for _, p := range h.register {
		sortOps(p)
	}
	for _, p := range h.mutex {
		sortOps(p)
	}
	return h
}

// neverCompleted stands in for the completion of an operation that has
// none: unknown, returning at infinity.
var neverCompleted = history.Event{Type: history.Info, Time: Infinity, Index: -1}

// lkey is a logical process: a history process and how many times its
// number was reused after retirement.
type lkey struct {
	p   history.Process
	gen int
}

type openKey struct {
	proc    int
	instant bool
}

type splitter struct {
	h        *linHistory
	ids      map[lkey]int
	hproc    map[int]history.Process
	gen      map[history.Process]int
	retired  map[int]bool
	open     map[openKey]history.Event
	grants   map[grantKey]grantState
	lastSeen map[int]int64
	unknown  map[int]pendingOp
}

func (s *splitter) proc(p history.Process) int {
	k := lkey{p, s.gen[p]}
	id, ok := s.ids[k]
	if !ok {
		id = len(s.ids)
		s.ids[k] = id
		s.hproc[id] = p
	}
	return id
}

func (s *splitter) part(m map[string]*partition, key string) *partition {
	p := m[key]
	if p == nil {
		p = &partition{key: key, clients: map[int]int{}}
		m[key] = p
	}
	return p
}

func (s *splitter) event(e history.Event) {
	h := s.h
	if e.Process == history.Nemesis {
		return // fault windows are read apart (checker.FaultWindows)
	}
	if e.Process < 0 {
		h.excluded["negative process"]++
		return
	}
	if e.F == history.FSession && e.Type == history.OK {
		h.sessions = append(h.sessions, sessionNote(e))
	}
	instant := checker.IsInstant(e.F)
	if e.Type == history.Invoke && !instant && s.retired[s.proc(e.Process)] {
		s.gen[e.Process]++
	}
	lp := s.proc(e.Process)
	s.lastSeen[lp] = max(s.lastSeen[lp], e.Time)
	k := openKey{lp, instant}
	if e.Type == history.Invoke {
		if o, ok := s.open[k]; ok {
			// A second invocation before a completion: the first is
			// unknown, and the process is retired.
			s.complete(o, lp, neverCompleted)
			if !instant {
				s.gen[e.Process]++
				lp = s.proc(e.Process)
				k = openKey{lp, instant}
			}
		}
		s.open[k] = e
		return
	}
	o, ok := s.open[k]
	if !ok || o.F != e.F || o.Key != e.Key {
		h.unmatched++
		return
	}
	delete(s.open, k)
	if e.F == history.FLate && e.Type == history.OK {
		s.late(lp, e)
		return
	}
	s.complete(o, lp, e)
}

func (s *splitter) complete(inv history.Event, lp int, c history.Event) {
	if statusOf(c) == stInfo && !checker.IsInstant(inv.F) {
		s.retired[lp] = true
		if c.Index >= 0 {
			// Held back: a late response may still tell its outcome.
			g, held := s.grants[grantKey{lp, inv.Key}]
			s.unknown[lp] = pendingOp{inv: inv, c: c, g: g, held: held}
			return
		}
	}
	s.h.complete(s.part, s.grants, inv, lp, c, nil)
}

// pendingOp is an operation that completed with info, with what its
// process held then (a lost event may end the grant before the operation
// is placed).
type pendingOp struct {
	inv, c history.Event
	g      grantState
	held   bool
}

// late uses a late response (the worker's answer to an operation the
// controller had already completed as info) as the completion it is: the
// operation took effect, or failed, by the time the answer arrived. This
// only narrows an unknown to what really happened, so it cannot make a
// correct run look wrong; it is what lets the register model see a stale
// write that a newer holder overwrote before anyone read it.
func (s *splitter) late(lp int, e history.Event) {
	o, ok := s.unknown[lp]
	// Older histories do not name the operation (Of); a retired process
	// has only the one operation outstanding, so the key must do.
	if !ok || e.Value == nil || (e.Value.Of != "" && o.inv.F != e.Value.Of) || o.inv.Key != e.Key {
		return
	}
	t := history.Type(e.Value.State)
	if t != history.OK && t != history.Fail {
		return
	}
	delete(s.unknown, lp)
	v := *e.Value
	v.State, v.Of = "", ""
	c := history.Event{Index: e.Index, Time: e.Time, Process: e.Process, Type: t, F: o.inv.F, Key: e.Key, Value: &v, Error: e.Error}
	s.h.lates++
	s.h.complete(s.part, s.grants, o.inv, lp, c, &o)
}

// sortOps orders a partition's operations by invocation, so the
// visualisation and the checker see them as they happened.
func sortOps(p *partition) {
	slices.SortStableFunc(p.ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
}

// complete turns one invocation/completion pair into model operations;
// held, when set, is what the process held when the operation was
// completed as info.
func (h *linHistory) complete(part func(map[string]*partition, string) *partition, grants map[grantKey]grantState,
	inv history.Event, lp int, c history.Event, snap *pendingOp) {
	st := statusOf(c)
	ret := c.Time
	if st == stInfo {
		ret = Infinity
	}
	gk := grantKey{lp, inv.Key}
	g, held := grants[gk]
	if snap != nil {
		g, held = snap.g, snap.held
	}
	switch inv.F {
	case history.FAcquire:
		switch st {
		case stOK:
			tok := register.NoToken
			if c.Value != nil && c.Value.Token != nil {
				tok = *c.Value.Token
			}
			grants[gk] = grantState{token: tok}
		case stFailed, stRejected:
			p := part(h.mutex, inv.Key)
			p.note(lp, c.Time, "acquire fail", c.Error)
			h.excluded["failed acquire"]++
			return
		}
		part(h.mutex, inv.Key).add(lp, inv.Time, ret, mutexIn{Op: mAcquire, Proc: lp}, mutexOut{Status: st}, metaOf(inv, c))
	case history.FRelease, history.FLost:
		delete(grants, gk)
		op := mRelease
		if inv.F == history.FLost {
			op = mLost
		}
		part(h.mutex, inv.Key).add(lp, inv.Time, ret, mutexIn{Op: op, Proc: lp}, mutexOut{Status: st}, metaOf(inv, c))
	case history.FRead, history.FWrite, history.FFinalRead:
		h.registerOp(part(h.register, inv.Key), grants, gk, g, held, inv, c, st, ret)
	default:
		// session, late and anything newer carry no register or lock
		// effect the models know of.
	}
}

func (h *linHistory) registerOp(p *partition, grants map[grantKey]grantState, gk grantKey, g grantState, held bool, inv, c history.Event, st opStatus, ret int64) {
	in := regIn{Token: register.NoToken}
	if held {
		in.Token = g.token
	}
	final := inv.F == history.FFinalRead
	if c.Value != nil && c.Value.Token != nil && !final {
		in.Token = *c.Value.Token
	}
	if inv.F == history.FWrite {
		in.Write = true
		switch {
		case inv.Value != nil && inv.Value.N != nil:
			in.N = *inv.Value.N
		case c.Value != nil && c.Value.N != nil:
			in.N = *c.Value.N
		default:
			h.excluded["write without a value"]++
			return
		}
		if held && g.hasBase {
			in.Base, in.HasBase = g.base, true
		}
	} else if final {
		// The controller's final read carries no token and moves no fence.
		in.Token = register.NoToken
	}
	out := regOut{Status: st}
	switch st {
	case stFailed:
		// A definite failure that the register did not answer with a
		// rejection never reached it (not holding, bad request): no
		// effect. Reads that failed, rejected or not, change nothing
		// either (a rejected read does not move the fence).
		p.note(gk.proc, c.Time, inv.F+" fail", c.Error)
		h.excluded["failed "+inv.F]++
		return
	case stRejected:
		if !in.Write {
			p.note(gk.proc, c.Time, "read rejected", c.Error)
			h.excluded["failed read"]++
			return
		}
	case stOK:
		if !in.Write {
			if c.Value == nil || c.Value.N == nil {
				h.excluded["read without a value"]++
				return
			}
			out.N = *c.Value.N
			switch {
			case final && c.Value.Token != nil:
				// The final read reports the register's token in token.
				out.WTok, out.HasWTok = *c.Value.Token, true
			case !final && c.Value.Current != nil:
				out.WTok, out.HasWTok = *c.Value.Current, true
			}
			if held && !final {
				grants[gk] = grantState{token: g.token, base: out.N, hasBase: true}
			}
		} else if held {
			grants[gk] = grantState{token: g.token, base: in.N, hasBase: true}
		}
	}
	p.add(gk.proc, inv.Time, ret, in, out, metaOf(inv, c))
}

// statusOf classifies a completion. A register rejection is a fail that
// carries the register's token (current_token); every other fail is a
// failure that never reached the register or the lock.
func statusOf(c history.Event) opStatus {
	switch c.Type {
	case history.OK:
		return stOK
	case history.Fail:
		if c.Value != nil && c.Value.Current != nil {
			return stRejected
		}
		return stFailed
	}
	return stInfo
}

// faultNote draws a fault window; a fault never undone in the history is
// shown to the end of the run.
func faultNote(w checker.FaultWindow) porcupine.Annotation {
	desc := w.F
	if w.PID != 0 {
		desc = fmt.Sprintf("%s pid %d", w.F, w.PID)
	}
	end, details := w.To, w.Target
	if end < 0 {
		end = Infinity
		details = strings.TrimSpace(details + " (not undone in the history)")
	}
	return porcupine.Annotation{Tag: "nemesis", Start: w.From, End: end, Description: desc,
		Details: details, BackgroundColor: "#ffd6d6"}
}

func sessionNote(e history.Event) porcupine.Annotation {
	state, sess := "", ""
	if e.Value != nil {
		state, sess = e.Value.State, e.Value.Session
	}
	return porcupine.Annotation{Tag: "sessions", Start: e.Time, End: e.Time,
		Description: fmt.Sprintf("p%d %s", e.Process, state), Details: "session " + sess,
		BackgroundColor: "#fff3c4"}
}
