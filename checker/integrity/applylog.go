package integrity

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// clockSlack is how far an apply-log entry's wall-clock time may lie
// before the invocation it is attributed to: the register's wall clock
// and the controller's run clock start from the same instant
// (test.json's start_wall_ns) but are different clocks.
const clockSlack = time.Second

// group is the invocations that can explain one kind of apply-log entry:
// one process, one key, one operation, and for writes one value.
type group struct {
	p     int
	key   string
	op    string // register.OpWrite, register.OpRead, or final for final reads
	value int64  // writes only
}

const final = "final-read"

// call is one invocation that can explain apply-log entries: when it was
// invoked, and by when its worker had answered it (ok or fail). An
// invocation left open or answered info has no end: its worker may still
// be acting on it.
type call struct {
	at, end int64
}

const open = math.MaxInt64

// invocations lists, per group, the invocations of reads, writes, final
// reads, claims and completes, in order, each with the time its answer
// was recorded. A process is sequential (the history check holds it to
// that), so an invocation's answer is its process's next completion of
// the same operation.
func invocations(h []history.Event) map[group][]call {
	out := map[group][]call{}
	type pf struct {
		p int
		f string
	}
	pending := map[pf]group{}
	for _, e := range h {
		if e.Process < 0 {
			continue
		}
		k := pf{int(e.Process), e.F}
		if e.Type != history.Invoke {
			if g, ok := pending[k]; ok && e.Type != history.Info {
				out[g][len(out[g])-1].end = e.Time
			}
			delete(pending, k)
			continue
		}
		g, ok := groupOf(e)
		if !ok {
			continue
		}
		out[g] = append(out[g], call{at: e.Time, end: open})
		pending[k] = g
	}
	return out
}

// groupOf is the group of an invocation, false for operations that make
// no apply-log entry.
func groupOf(e history.Event) (group, bool) {
	g := group{p: int(e.Process), key: e.Key}
	switch e.F {
	case history.FWrite:
		g.op = register.OpWrite
		if e.Value != nil && e.Value.N != nil {
			g.value = *e.Value.N
		}
	case history.FRead:
		g.op = register.OpRead
	case history.FFinalRead:
		g.op = final
	case history.FClaim:
		g.op = register.OpClaim
	case history.FComplete:
		g.op = register.OpComplete
	default:
		return g, false
	}
	return g, true
}

// retry is the last claim or complete of a group an invocation explained:
// the worker may send the same call again while that invocation is
// unanswered (register.MaxTaskRetries times), when a reply was lost.
type retry struct {
	call   call
	token  int64
	copies int
}

// attribute matches every apply-log entry to an invoked read or write of
// the same process and key (a write also to its value): the register
// applies what a worker (or, for final reads, the controller) asked for,
// once per request, so each invocation explains at most one entry, and
// not one committed before it was invoked. Entries are taken in commit
// order, each by the earliest invocation still unused that it may follow,
// which finds a full matching whenever one exists. A read without a token
// is the controller's final read, else a worker's. The one exception is
// a task call whose reply was lost: the worker sends it again under the
// same term (docs/worker-protocol.md, leader election), so a claim or
// complete may also be a retry of the invocation that explained the
// group's previous entry, as long as that invocation was unanswered when
// the retry was committed. False when ctx ended.
func attribute(ctx context.Context, in checker.Input, d *Details) bool {
	invs := invocations(in.History)
	known := map[int]bool{}
	for _, e := range in.History {
		known[int(e.Process)] = true
	}
	used := map[group]int{}
	last := map[group]*retry{}
	log := in.ApplyLog
	if !slices.IsSortedFunc(log, bySeq) {
		log = slices.SortedStableFunc(slices.Values(log), bySeq)
	}
	for i, e := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return false
		}
		at, timed := int64(0), in.StartWall != 0 && e.Wall != 0
		if timed {
			at = e.Wall - in.StartWall + int64(clockSlack)
		}
		if e.Op == register.OpInit {
			d.Attributed++ // the controller's setup of the task table
			continue
		}
		gs := candidates(e)
		if e.ReplyDropped && peek(invs, used, gs, at, timed) {
			// Its reply was dropped, so the worker sent the same call again:
			// the invocation that explains the retry explains this one too.
			d.Attributed++
			continue
		}
		if isRetry(last[gs[0]], e, at-2*int64(clockSlack), timed) {
			last[gs[0]].copies++
			d.Attributed++
			continue
		}
		if c, ok := take(invs, used, gs, at, timed); ok {
			if e.Op == register.OpClaim || e.Op == register.OpComplete {
				last[gs[0]] = &retry{call: c, token: e.Token}
			}
			d.Attributed++
			continue
		}
		d.add(Problem{Kind: KindUnattributed, Index: -1, Seq: e.Seq, Message: unattributed(e, known[e.Process])})
	}
	return true
}

// isRetry says e is the same task call again, under the same term, while
// the invocation that explained the first was still unanswered (by the
// register's clock, earliest is the least e's commit can lie on the run
// clock), and within the retries a worker may make.
func isRetry(r *retry, e register.Entry, earliest int64, timed bool) bool {
	return r != nil && r.token == e.Token && r.copies < register.MaxTaskRetries &&
		(!timed || earliest <= r.call.end)
}

func bySeq(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) }

// candidates are the groups whose invocations could have made e, in the
// order they are tried.
func candidates(e register.Entry) []group {
	g := group{p: e.Process, key: e.Key, op: e.Op}
	switch {
	case e.Op == register.OpClaim || e.Op == register.OpComplete:
		g.key = e.Task
		return []group{g}
	case e.Op == register.OpWrite:
		g.value = e.Value
		return []group{g}
	case e.HasToken:
		return []group{g}
	}
	f := g
	f.op = final
	return []group{f, g}
}

// take uses the first unused invocation of the first candidate group that
// has one invoked by at (when timed).
func take(invs map[group][]call, used map[group]int, gs []group, at int64, timed bool) (call, bool) {
	for _, g := range gs {
		cs := invs[g]
		if n := used[g]; n < len(cs) && (!timed || cs[n].at <= at) {
			used[g] = n + 1
			return cs[n], true
		}
	}
	return call{}, false
}

// peek reports whether take would find an invocation, without using it.
func peek(invs map[group][]call, used map[group]int, gs []group, at int64, timed bool) bool {
	for _, g := range gs {
		cs := invs[g]
		if n := used[g]; n < len(cs) && (!timed || cs[n].at <= at) {
			return true
		}
	}
	return false
}

func unattributed(e register.Entry, known bool) string {
	what := fmt.Sprintf("apply log seq %d: %s %s", e.Seq, e.Op, cmp.Or(e.Key, e.Task))
	if e.Op == register.OpWrite {
		what += fmt.Sprintf(" of %d", e.Value)
	}
	if e.HasToken {
		what += fmt.Sprintf(" with token %d", e.Token)
	}
	what += fmt.Sprintf(" by process %d", e.Process)
	if !known {
		return what + ", a process the history never mentions"
	}
	return what + fmt.Sprintf(" matches no %s that process invoked (before it was committed)", e.Op)
}

func sortByIndex(es []history.Event) {
	slices.SortFunc(es, func(a, b history.Event) int { return cmp.Compare(a.Index, b.Index) })
}
