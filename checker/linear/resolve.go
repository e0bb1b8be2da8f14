package linear

import (
	"fmt"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Resolving an info read or write against the apply log.
//
// An info operation returns at infinity, so it keeps its key open to the
// end and no later cut is possible. Once its worker process has exited
// (and no request of it can reach the register any more), the apply log
// holds the truth: the operation is in it, accepted or rejected, or it
// never reached the register. A process makes one operation at a time
// and is retired at its info operation, so that operation is its last:
// it is in the log iff the log holds one more read or write of the
// process than the history has reads and writes of it that reached the
// register (ok, or rejected by it), and then it is the process's last
// entry, which must match it (key, read or write, value written, token
// when known). Then it becomes
//
//   - accepted: an ok read (the value the log says it read, and the
//     register's token then) or an ok write, returning at the time of
//     the resolution, when the entry was already committed;
//   - rejected: a rejected write (a rejected read has no effect and is
//     left out, as failed reads are);
//   - never applied: left out.
//
// Each only narrows what the info operation allowed (the model applies
// an info operation where the register would accept it and nowhere
// else, and an operation left out is the info operation placed last,
// where it is unobservable), so a key the whole check calls false stays
// false; and it narrows to what the register did, so a correct run stays
// true. Counts that do not fit (the history says a request reached the
// register that the log lacks, or the reverse) leave the operation
// unresolved: open to the end, as before.
//
// Only register operations are resolved: the apply log says nothing of
// lock grants, so a mutex key stays open from its first info operation.

// applied takes one apply-log entry, in commit order.
func (s *splitter) applied(e register.Entry) {
	if e.Op != register.OpRead && e.Op != register.OpWrite {
		return
	}
	p := history.Process(e.Process)
	l := s.logged[p]
	if l == nil {
		l = &procLog{}
		s.logged[p] = l
	}
	l.n++
	l.last = e
}

// resolve resolves the held-back info reads and writes of history
// process p at time at; the caller guarantees that p's worker has exited,
// that no request of it can reach the register any more, and that every
// entry committed until now was given to applied. It returns how many it
// could not resolve.
func (s *splitter) resolve(p history.Process, at int64) int {
	unresolved := 0
	for lp, o := range s.unknown {
		if s.hproc[lp] != p || (o.inv.F != history.FRead && o.inv.F != history.FWrite) {
			continue
		}
		c, ok := s.resolution(p, o, at)
		if !ok {
			unresolved++
			continue
		}
		s.unpend(lp)
		if c == nil {
			s.h.excluded["info "+o.inv.F+" never applied (apply log)"]++
			continue
		}
		s.place(o.inv, lp, *c, &o)
	}
	delete(s.logged, p)
	return unresolved
}

// resolution is the completion the apply log gives inv (nil: it never
// reached the register), false when the log and the history disagree.
func (s *splitter) resolution(p history.Process, o pendingOp, at int64) (*history.Event, bool) {
	inv := o.inv
	n, l := 0, register.Entry{}
	if pl := s.logged[p]; pl != nil {
		n, l = pl.n, pl.last
	}
	switch n - s.reached[p] {
	case 0:
		return nil, true
	case 1:
	default:
		return nil, false
	}
	if l.Op != inv.F || l.Key != inv.Key || (o.held && l.HasToken && o.g.token != register.NoToken && l.Token != o.g.token) {
		return nil, false
	}
	if inv.F == history.FWrite && (inv.Value == nil || inv.Value.N == nil || *inv.Value.N != l.Value) {
		return nil, false
	}
	v := &history.Value{N: history.Int64(l.Value)}
	if l.HasToken {
		v.Token = history.Int64(l.Token)
	}
	c := history.Event{Index: -1, Time: max(at, inv.Time), Process: p, Type: history.OK, F: inv.F, Key: inv.Key, Value: v,
		Error: fmt.Sprintf("resolved by the apply log, seq %d", l.Seq)}
	switch {
	case !l.Accepted:
		c.Type = history.Fail
		v.Current = history.Int64(l.PrevFence)
	case inv.F == history.FRead:
		v.Current = history.Int64(l.PrevToken)
	}
	return &c, true
}
