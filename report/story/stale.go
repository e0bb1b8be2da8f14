package story

import (
	"fmt"

	"github.com/zkchaos/zkchaos/resource/register"
)

// staleCase is a violation in which an older grant acted on the resource
// around a newer grant of the same key: a double write (lock) or a call
// under a stale term (election). Both are told the same way: the stale
// grant, what it built on, the fault that hit it, its session's end, the
// newer grant and its writes, the heal, the stale write and the
// register's answer, the cost.
type staleCase struct {
	nouns grantNouns
	// key is the grant's (lock key, election service).
	key   string
	stale grant
	// newer is the other grant the violation names; nil when it names
	// none (a lost update at a key's first write).
	newer *grant
	// entries are the violation's apply-log lines, oldest first; the last
	// one made the violation.
	entries []register.Entry
	// readKey is the register key whose last read by the stale grant the
	// story tells (what its write built on); "" tells none.
	readKey     string
	consequence string
}

func (c staleCase) tell(r *records) []Step {
	var t tale
	if len(c.entries) == 0 {
		t.missing("results.json lists no apply-log entries for this violation, so there is nothing to tell it from")
		return t.sorted()
	}
	mine, others := c.split()
	first, last := mine[0], mine[len(mine)-1]
	g, hasGrant := t.grantStep(r, c.nouns, c.key, c.stale, r.entryTime(first))
	s := span{fromWhat: "the run's start"}
	if hasGrant {
		s.from, s.fromWhat = g.Done, "its "+c.nouns.verb
	}
	if c.readKey != "" {
		if rd, ok := t.readStep(r, c.readKey, c.stale, first, last); ok && !hasGrant {
			s.from, s.fromWhat = r.entryTime(rd).ns, "its read"
		}
	}
	s.to, s.toWhat = r.v.End, "the history's end"
	if w := r.entryTime(last); w.ok {
		s.to, s.toWhat = w.ns, "its "+opNoun(last)
	}
	t.faultSteps(r, c.stale.process, s)
	t.sessionSteps(r, c.stale.process, c.key, s)
	t.learnStep(r, c.stale.process, c.key, s)
	if c.newer != nil && *c.newer != c.stale {
		before := when{}
		if len(others) > 0 {
			before = r.entryTime(others[0])
		}
		t.grantStep(r, c.nouns, c.key, *c.newer, before)
	}
	for _, e := range c.entries {
		if grantOfEntry(e) == c.stale {
			t.callSteps(r, e)
		}
		st := t.entryStep(r, e)
		st.Mark = e.Seq == c.entries[len(c.entries)-1].Seq
	}
	t.add(r.entryTime(c.entries[len(c.entries)-1]), c.consequence, "")
	return t.sorted()
}

// split parts the violation's entries into the stale grant's and the
// others'; an entry list without the stale grant is told as if its last
// entry were the stale one.
func (c staleCase) split() (mine, others []register.Entry) {
	for _, e := range c.entries {
		if grantOfEntry(e) == c.stale {
			mine = append(mine, e)
		} else {
			others = append(others, e)
		}
	}
	if len(mine) == 0 {
		mine = c.entries[len(c.entries)-1:]
	}
	return mine, others
}

// readStep tells the stale grant's last read before its first write in
// the violation, and what the register accepted from others between that
// read and its last write: what the stale write overwrote.
func (t *tale) readStep(r *records, key string, g grant, first, last register.Entry) (register.Entry, bool) {
	rd, ok := r.lastRead(key, g, first.Seq)
	if !ok {
		t.missing(fmt.Sprintf("no read of %s by %s before its write (seq %d) is in the apply log", key, pn(g.process), first.Seq))
		return rd, false
	}
	t.entryStep(r, rd)
	var between []register.Entry
	for _, e := range r.writesBetween(key, rd.Seq, last.Seq) {
		if grantOfEntry(e) != g {
			between = append(between, e)
		}
	}
	if len(between) == 0 {
		t.add(r.entryTime(last), fmt.Sprintf("between %s's read (seq %d) and its write (seq %d) the register accepted no write to %s by another grant",
			pn(g.process), rd.Seq, last.Seq, key), "")
		return rd, true
	}
	end := between[len(between)-1]
	seqs := fmt.Sprintf("seq %d", end.Seq)
	if len(between) > 1 {
		seqs = fmt.Sprintf("seqs %d–%d", between[0].Seq, end.Seq)
	}
	t.add(r.entryTime(last), fmt.Sprintf("between %s's read (seq %d) and its write (seq %d) the register accepted %s to %s by %s (%s), the last n=%d",
		pn(g.process), rd.Seq, last.Seq, plural(len(between), "write"), key, procList(between), seqs, end.Value), "")
	return rd, true
}

// opNoun names an entry's operation as the story's window does: "write",
// "claim", "complete".
func opNoun(e register.Entry) string { return e.Op }
