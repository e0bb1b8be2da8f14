package story

import (
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
)

// maxGrantWrites bounds the writes of one grant an overlap or token story
// tells; a lock grant writes once, a buggy recipe may write on and on.
const maxGrantWrites = 4

func tellDoubleWriter(r *records, res checker.Result, limit int) ([]Story, Count, error) {
	var d fence.DoubleWriterDetails
	if err := res.DecodeDetails(&d); err != nil {
		return nil, Count{}, err
	}
	c := Count{Listed: len(d.Violations), Told: min(len(d.Violations), limit)}
	for _, n := range d.ViolationCounts {
		c.Total += n
	}
	var out []Story
	for i, v := range d.Violations[:c.Told] {
		sc := doubleWriteCase(v)
		title := fmt.Sprintf("%s on %s: %s", v.Kind, v.Key, grantNames(sc))
		out = append(out, Story{Checker: fence.NameDoubleWriter, Index: i, Title: title, Steps: sc.tell(r)})
	}
	return out, c, nil
}

// doubleWriteCase reads a double-writer violation as a stale grant acting
// around a newer one (fence.Violation's Entries, per kind).
func doubleWriteCase(v fence.Violation) staleCase {
	c := staleCase{nouns: lockNouns, key: v.Key, entries: v.Entries, readKey: v.Key}
	es := v.Entries
	switch {
	case len(es) == 0:
		return c
	case v.Kind == fence.KindTokenRegression && len(es) == 2:
		c.stale, c.newer = grantOfEntry(es[1]), ptr(grantOfEntry(es[0]))
		c.consequence = fmt.Sprintf("the register accepted token %d from %s after it had accepted the higher token %d from %s (seq %d): a stale holder's write got through",
			es[1].Token, pn(es[1].Process), es[0].Token, pn(es[0].Process), es[0].Seq)
	case v.Kind == fence.KindInterleavedGrants && len(es) == 3:
		c.stale, c.newer = grantOfEntry(es[0]), ptr(grantOfEntry(es[1]))
		c.consequence = fmt.Sprintf("two grants of %s wrote in turn: %s (token %d) at seqs %d and %d, %s (token %d) at seq %d in between",
			v.Key, pn(es[0].Process), es[0].Token, es[0].Seq, es[2].Seq, pn(es[1].Process), es[1].Token, es[1].Seq)
	case v.Kind == fence.KindLostUpdate:
		lostUpdateCase(&c, v)
	default:
		c.stale = grantOfEntry(es[len(es)-1])
		c.consequence = v.Message
	}
	return c
}

// lostUpdateCase: of the two writes, the stale one is the lower token's
// (the older grant); without two different tokens, the one whose value
// went back.
func lostUpdateCase(c *staleCase, v fence.Violation) {
	es := v.Entries
	e := es[len(es)-1]
	if len(es) == 1 || v.Expected == nil || v.Actual == nil {
		c.stale = grantOfEntry(e)
		c.consequence = fmt.Sprintf("the first accepted write to %s wrote n=%d (expected %d)", v.Key, e.Value, deref(v.Expected, 1))
		return
	}
	prev := es[0]
	exp, act := *v.Expected, *v.Actual
	stale, newer := e, prev
	switch {
	case prev.HasToken && e.HasToken && prev.Token != e.Token:
		if prev.Token < e.Token {
			stale, newer = prev, e
		}
	case act > exp:
		stale, newer = prev, e
	}
	c.stale, c.newer = grantOfEntry(stale), ptr(grantOfEntry(newer))
	if act < exp {
		c.consequence = fmt.Sprintf("the register's counter for %s went from %d to %d although every write adds one (expected %d, actual %d): %s lost",
			v.Key, prev.Value, act, exp, act, plural(int(exp-act), "increment"))
		return
	}
	c.consequence = fmt.Sprintf("the register's counter for %s went from %d to %d (expected %d, actual %d): the write did not add one to the value the register held",
		v.Key, prev.Value, act, exp, act)
}

func tellGrantOverlap(r *records, res checker.Result, limit int) ([]Story, Count, error) {
	var d lock.GrantOverlapDetails
	if err := res.DecodeDetails(&d); err != nil {
		return nil, Count{}, err
	}
	c := Count{Total: d.OverlapCount + d.FalseReleaseCount, Listed: len(d.Overlaps) + len(d.FalseReleases)}
	var out []Story
	for i, o := range d.Overlaps {
		if len(out) == limit {
			break
		}
		out = append(out, Story{Checker: lock.NameGrantOverlap, Index: i,
			Title: fmt.Sprintf("overlap on %s: %s granted while %s held it", o.Key, pn(o.Intruder), pn(o.Holder)), Steps: overlapSteps(r, o)})
	}
	for j, f := range d.FalseReleases {
		if len(out) == limit {
			break
		}
		out = append(out, Story{Checker: lock.NameGrantOverlap, Index: len(d.Overlaps) + j,
			Title: fmt.Sprintf("false release of %s by %s", f.Key, pn(f.Holder)), Steps: falseReleaseSteps(r, f)})
	}
	c.Told = len(out)
	return out, c, nil
}

// overlapSteps: the holder's grant, what hit it, the intruder's grant
// (the violation), both grants' writes, the holder's release that
// claimed it held all along, and how long both held the key.
func overlapSteps(r *records, o lock.Overlap) []Step {
	var t tale
	holder := grant{o.Holder, o.HolderTok, true}
	intruder := grant{o.Intruder, o.IntruderTok, true}
	t.grantStep(r, lockNouns, o.Key, holder, at(o.HeldFromNS))
	s := span{o.HeldFromNS, o.ReleaseNS, "its acquire", "its release"}
	t.faultSteps(r, o.Holder, s)
	t.sessionSteps(r, o.Holder, o.Key, s)
	t.add(at(o.GrantedNS), fmt.Sprintf("%s acquired %s with token %d at %s, while %s held it by its own account",
		pn(o.Intruder), o.Key, o.IntruderTok, sec(o.GrantedNS), pn(o.Holder)), grantRef(r, o.Key, intruder)).Mark = true
	t.grantWrites(r, o.Key, holder, o.HeldFromNS)
	t.grantWrites(r, o.Key, intruder, o.GrantedNS)
	t.releaseStep(r, o.Key, holder, o.ReleaseNS)
	t.add(at(o.ReleaseNS), fmt.Sprintf("by their own accounts %s and %s both held %s for %.2f s, from %s's grant at %s to %s's release at %s",
		pn(o.Holder), pn(o.Intruder), o.Key, float64(o.ReleaseNS-o.GrantedNS)/1e9, pn(o.Intruder), sec(o.GrantedNS), pn(o.Holder), sec(o.ReleaseNS)), "")
	return t.sorted()
}

// falseReleaseSteps: the holder's grant, what hit it, its session seen
// gone, its release answered ok (the violation) and by how much later.
func falseReleaseSteps(r *records, f lock.FalseRelease) []Step {
	var t tale
	holder := grant{f.Holder, f.HolderTok, true}
	t.grantStep(r, lockNouns, f.Key, holder, at(f.HeldFromNS))
	s := span{f.HeldFromNS, f.ReleaseNS, "its acquire", "its release"}
	t.faultSteps(r, f.Holder, s)
	t.sessionSteps(r, f.Holder, f.Key, s)
	t.grantWrites(r, f.Key, holder, f.ReleaseNS)
	t.releaseStep(r, f.Key, holder, f.ReleaseNS).Mark = true
	t.add(at(f.ReleaseNS), fmt.Sprintf("%s's release answered ok %.2f s after the nemesis had seen its session %s gone (at %s): its lock node had gone with the session",
		pn(f.Holder), float64(f.ReleaseNS-f.GoneAtNS)/1e9, f.Session, sec(f.GoneAtNS)), "")
	return t.sorted()
}

func tellTokenOrder(r *records, res checker.Result, limit int) ([]Story, Count, error) {
	var d lock.TokenOrderDetails
	if err := res.DecodeDetails(&d); err != nil {
		return nil, Count{}, err
	}
	c := Count{Total: d.RegressionCount, Listed: len(d.Regressions), Told: min(len(d.Regressions), limit)}
	var out []Story
	for i, g := range d.Regressions[:c.Told] {
		out = append(out, Story{Checker: lock.NameTokenOrder, Index: i,
			Title: fmt.Sprintf("token order on %s: token %d after %d", g.Key, g.Tokens[1], g.Tokens[0]), Steps: tokenOrderSteps(r, g)})
	}
	return out, c, nil
}

// tokenOrderSteps: the earlier grant, every fault between the two
// grants, the later grant with a token not higher (the violation), and
// the later grant's writes with the register's answers.
func tokenOrderSteps(r *records, g lock.TokenRegression) []Step {
	var t tale
	a := grant{g.Processes[0], g.Tokens[0], true}
	b := grant{g.Processes[1], g.Tokens[1], true}
	t.grantStep(r, lockNouns, g.Key, a, at(g.TimesNS[0]))
	n := 0
	for _, w := range r.v.Faults {
		if w.From <= g.TimesNS[1] && w.To >= g.TimesNS[0] && w.F != history.FRestore {
			t.add(at(w.From), fmt.Sprintf("%s at %s", faultStart(w), sec(w.From)), "nemesis "+w.F)
			n++
		}
	}
	if n == 0 {
		t.missingAt(g.TimesNS[0], fmt.Sprintf("no fault is recorded between the two grants (%s and %s)", sec(g.TimesNS[0]), sec(g.TimesNS[1])))
	}
	t.add(at(g.TimesNS[1]), fmt.Sprintf("%s acquired %s with token %d at %s, not higher than %s's token %d granted before it",
		pn(b.process), g.Key, b.token, sec(g.TimesNS[1]), pn(a.process), a.token), grantRef(r, g.Key, b)).Mark = true
	t.grantWrites(r, g.Key, b, g.TimesNS[1])
	return t.sorted()
}

// grantRef is the history reference of a grant's acquire, "" when the
// history has none.
func grantRef(r *records, key string, g grant) string {
	if o, ok := r.grantOp(history.FAcquire, key, g, when{}); ok {
		return histRef(o.Index)
	}
	return ""
}

// grantWrites tells a grant's writes of key with the register's answers.
// A grant that wrote nothing is said at place.
func (t *tale) grantWrites(r *records, key string, g grant, place int64) {
	ws := r.writesOf(key, g)
	for i, e := range ws {
		if i == maxGrantWrites {
			t.add(r.entryTime(e), fmt.Sprintf("%s wrote %s more under token %d (see the apply log)", pn(g.process), plural(len(ws)-i, "time"), g.token), "")
			return
		}
		t.entryStep(r, e)
	}
	if len(ws) == 0 {
		t.missingAt(place, fmt.Sprintf("the apply log has no write to %s by %s with token %d", key, pn(g.process), g.token))
	}
}

// releaseStep tells the holder's release invoked at ns, and its answer.
func (t *tale) releaseStep(r *records, key string, g grant, ns int64) *Step {
	for _, o := range r.ops[history.Process(g.process)] {
		if o.F == history.FRelease && o.Key == key && o.Invoke == ns {
			return t.add(at(ns), fmt.Sprintf("%s released %s at %s; the release answered %s at %s",
				pn(g.process), key, sec(ns), o.Type, sec(o.Done)), histRef(o.Index))
		}
	}
	return t.add(at(ns), fmt.Sprintf("%s released %s at %s (the checker's record; the history's release was not found)", pn(g.process), key, sec(ns)), "")
}

// grantNames names a stale case's grants for a title.
func grantNames(c staleCase) string {
	s := pn(c.stale.process) + withToken(c.stale, c.nouns.token)
	if c.newer != nil && *c.newer != c.stale {
		s += fmt.Sprintf(" against %s%s", pn(c.newer.process), withToken(*c.newer, c.nouns.token))
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}
