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
	"github.com/zkchaos/zkchaos/resource/register"
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
	// track is the key's segmenter state, told of every operation added;
	// nil for the partition that discards the other model's operations.
	track *keyTrack
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
	if p.track == nil {
		return
	}
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
	op := porcupine.Operation{ClientId: p.client(proc), Input: in, Call: call, Output: out, Return: ret, Metadata: meta}
	p.ops = append(p.ops, op)
	p.track.observe(op)
}

func (p *partition) note(proc int, at int64, desc, details string) {
	if p.track == nil || p.track.res.givenUp != "" {
		return
	}
	p.notes = append(p.notes, porcupine.Annotation{ClientId: p.client(proc), Start: at, End: at,
		Description: desc, Details: details, BackgroundColor: "#eeeeee"})
}

// linHistory is what the splitter keeps of the history besides the
// segments: the annotations of the pages and the counts of the evidence.
type linHistory struct {
	// nemesisEvents are kept to draw the fault windows
	// (checker.FaultWindows) on the pages; a run has few.
	nemesisEvents []history.Event
	sessions      []porcupine.Annotation
	// Excluded counts operations left out of the models, by reason.
	excluded map[string]int
	// unmatched counts completions without an invocation.
	unmatched int
	// procs names the logical processes for the visualisation.
	procs map[int]history.Process
	// lates counts the info operations whose late response was used.
	lates int
}

// nemesisNotes are the fault windows of the nemesis events seen so far.
func (h *linHistory) nemesisNotes() []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, w := range checker.FaultWindows(h.nemesisEvents) {
		out = append(out, faultNote(w))
	}
	return out
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

// The splitter pairs invocations with completions and turns them into the
// register and mutex operations of each key's open segment (segment.go).
// It never fails: events it cannot use are counted in excluded, so an odd
// history gives a verdict on what it does hold rather than an error.
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
//
// The splitter tells the segmenter which operations of a key are open:
// invocations without their completion, info operations held back for a
// late answer or the apply log (pending), and, for the mutex, retired
// holders (whose implicit release is due at the end).

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
	seg      *segmenter
	ids      map[lkey]int
	hproc    map[int]history.Process
	gen      map[history.Process]int
	retired  map[int]bool
	open     map[openKey]history.Event
	grants   map[grantKey]grantState
	lastSeen map[int]int64
	unknown  map[int]pendingOp
	// reached counts, per history process, its reads and writes that
	// reached the register (ok, or rejected by it), and logged its reads
	// and writes in the apply log: resolve compares the two.
	reached map[history.Process]int
	logged  map[history.Process]*procLog
	// keepNotes bounds the nemesis and session events kept for the pages
	// (0: all): a soak must not keep every fault of hours.
	keepNotes int
}

// keepLast drops the older half of xs once it holds more than n (n > 0),
// so that appending stays amortised O(1).
func keepLast[T any](xs []T, n int) []T {
	if n <= 0 || len(xs) <= n {
		return xs
	}
	return slices.Clone(xs[len(xs)-n/2:])
}

// procLog is what the apply log says of one process: how many reads and
// writes it committed, and the last.
type procLog struct {
	n    int
	last register.Entry
}

func newSplitter(seg *segmenter) *splitter {
	h := &linHistory{excluded: map[string]int{}}
	s := &splitter{h: h, seg: seg, ids: map[lkey]int{}, hproc: map[int]history.Process{}, gen: map[history.Process]int{},
		retired: map[int]bool{}, open: map[openKey]history.Event{}, grants: map[grantKey]grantState{},
		lastSeen: map[int]int64{}, unknown: map[int]pendingOp{}, reached: map[history.Process]int{},
		logged: map[history.Process]*procLog{}}
	h.procs = s.hproc
	seg.h = h
	return s
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

func (s *splitter) event(e history.Event) {
	h := s.h
	if e.Process == history.Nemesis {
		h.nemesisEvents = keepLast(append(h.nemesisEvents, e), s.keepNotes)
		return
	}
	if e.Process < 0 {
		h.excluded["negative process"]++
		return
	}
	if e.F == history.FSession && e.Type == history.OK {
		h.sessions = keepLast(append(h.sessions, sessionNote(e)), s.keepNotes)
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
			s.unopen(k)
			s.complete(o, lp, neverCompleted)
			if !instant {
				s.gen[e.Process]++
				lp = s.proc(e.Process)
				k = openKey{lp, instant}
			}
		}
		s.open[k] = e
		s.seg.opened(e.F, e.Key, 1)
		return
	}
	o, ok := s.open[k]
	if !ok || o.F != e.F || o.Key != e.Key {
		h.unmatched++
		return
	}
	s.unopen(k)
	if e.F == history.FLate && e.Type == history.OK {
		s.late(lp, e)
		return
	}
	s.complete(o, lp, e)
}

func (s *splitter) unopen(k openKey) {
	o := s.open[k]
	delete(s.open, k)
	s.seg.opened(o.F, o.Key, -1)
}

// finish completes what the history left open, as the end of the run
// leaves it: open invocations and held-back info operations return at
// infinity, and retired holders get their implicit release.
func (s *splitter) finish() {
	for k, o := range s.open {
		s.unopen(k)
		s.complete(o, k.proc, neverCompleted)
	}
	for lp, o := range s.unknown {
		s.unpend(lp)
		s.place(o.inv, lp, o.c, &o)
	}
	for gk := range s.grants {
		if s.retired[gk.proc] {
			s.seg.opened(history.FRelease, gk.key, -1)
			s.seg.part(history.FRelease, gk.key).add(gk.proc, s.lastSeen[gk.proc], Infinity,
				mutexIn{Op: mRelease, Proc: gk.proc, Implicit: true}, mutexOut{Status: stInfo},
				opMeta{Process: s.hproc[gk.proc], Invoke: -1, Complete: -1, Note: "implicit release of a retired holder"})
		}
	}
}

func (s *splitter) complete(inv history.Event, lp int, c history.Event) {
	if statusOf(c) == stInfo && !checker.IsInstant(inv.F) {
		s.retire(lp)
		if _, pending := s.unknown[lp]; c.Index >= 0 && !pending {
			// Held back: a late response or the apply log may still
			// tell its outcome.
			g, held := s.grants[grantKey{lp, inv.Key}]
			s.unknown[lp] = pendingOp{inv: inv, c: c, g: g, held: held}
			s.seg.opened(inv.F, inv.Key, 1)
			return
		}
	}
	s.place(inv, lp, c, nil)
}

func (s *splitter) unpend(lp int) {
	o := s.unknown[lp]
	delete(s.unknown, lp)
	s.seg.opened(o.inv.F, o.inv.Key, -1)
}

// retire marks lp retired; the locks it holds become open mutex
// operations (its implicit releases).
func (s *splitter) retire(lp int) {
	if s.retired[lp] {
		return
	}
	s.retired[lp] = true
	for gk := range s.grants {
		if gk.proc == lp {
			s.seg.opened(history.FRelease, gk.key, 1)
		}
	}
}

func (s *splitter) setGrant(gk grantKey, g grantState) {
	if _, had := s.grants[gk]; !had && s.retired[gk.proc] {
		s.seg.opened(history.FRelease, gk.key, 1)
	}
	s.grants[gk] = g
}

func (s *splitter) dropGrant(gk grantKey) {
	if _, had := s.grants[gk]; had {
		delete(s.grants, gk)
		if s.retired[gk.proc] {
			s.seg.opened(history.FRelease, gk.key, -1)
		}
	}
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
	s.unpend(lp)
	v := *e.Value
	v.State, v.Of = "", ""
	c := history.Event{Index: e.Index, Time: e.Time, Process: e.Process, Type: t, F: o.inv.F, Key: e.Key, Value: &v, Error: e.Error}
	s.h.lates++
	s.place(o.inv, lp, c, &o)
}

// sortOps orders a partition's operations by invocation, so the
// visualisation and the checker see them as they happened.
func sortOps(p *partition) {
	slices.SortStableFunc(p.ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
}

// place turns one invocation/completion pair into model operations;
// snap, when set, is what the process held when the operation was
// completed as info.
func (s *splitter) place(inv history.Event, lp int, c history.Event, snap *pendingOp) {
	st := statusOf(c)
	ret := c.Time
	if st == stInfo {
		ret = Infinity
	}
	if (inv.F == history.FRead || inv.F == history.FWrite) && (st == stOK || st == stRejected) {
		s.reached[s.hproc[lp]]++
	}
	gk := grantKey{lp, inv.Key}
	g, held := s.grants[gk]
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
			s.setGrant(gk, grantState{token: tok})
		case stFailed, stRejected:
			s.seg.part(inv.F, inv.Key).note(lp, c.Time, "acquire fail", c.Error)
			s.h.excluded["failed acquire"]++
			return
		}
		s.seg.part(inv.F, inv.Key).add(lp, inv.Time, ret, mutexIn{Op: mAcquire, Proc: lp}, mutexOut{Status: st}, metaOf(inv, c))
	case history.FRelease, history.FLost:
		s.dropGrant(gk)
		op := mRelease
		if inv.F == history.FLost {
			op = mLost
		}
		s.seg.part(inv.F, inv.Key).add(lp, inv.Time, ret, mutexIn{Op: op, Proc: lp}, mutexOut{Status: st}, metaOf(inv, c))
	case history.FRead, history.FWrite, history.FFinalRead:
		s.registerOp(s.seg.part(inv.F, inv.Key), gk, g, held, inv, c, st, ret)
	default:
		// session, late and anything newer carry no register or lock
		// effect the models know of.
	}
}

func (s *splitter) registerOp(p *partition, gk grantKey, g grantState, held bool, inv, c history.Event, st opStatus, ret int64) {
	h := s.h
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
				s.setGrant(gk, grantState{token: g.token, base: out.N, hasBase: true})
			}
		} else if held {
			s.setGrant(gk, grantState{token: g.token, base: in.N, hasBase: true})
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
