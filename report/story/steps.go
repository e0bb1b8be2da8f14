package story

import (
	"fmt"
	"slices"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// maxSessionSteps bounds the session events one story tells of one
// process; the rest are counted in one more step.
const maxSessionSteps = 6

// tale collects a story's steps in the order they are told; sorted
// orders them by time.
type tale struct{ steps []placed }

// placed is a step and where it goes: at its time, at the time the
// records lack it for (a missing step), or, with inherit, after the step
// told before it.
type placed struct {
	at      int64
	inherit bool
	step    Step
}

func (t *tale) add(w when, text, ref string) *Step {
	t.steps = append(t.steps, placed{at: w.ns, inherit: !w.ok, step: Step{TimeNS: w.ns, Timed: w.ok, Text: sentence(text), Ref: ref}})
	return &t.steps[len(t.steps)-1].step
}

// missing tells that the records lack a step, after the step told before.
func (t *tale) missing(text string) { t.add(when{}, text, "") }

// missingAt tells that the records lack a step that belongs at ns.
func (t *tale) missingAt(ns int64, text string) {
	t.steps = append(t.steps, placed{at: ns, step: Step{Text: sentence(text)}})
}

// sorted orders the steps by time, stable.
func (t *tale) sorted() []Step {
	ps := slices.Clone(t.steps)
	var last int64
	for i := range ps {
		if ps[i].inherit {
			ps[i].at = last
		}
		last = ps[i].at
	}
	slices.SortStableFunc(ps, func(a, b placed) int { return int(sign(a.at - b.at)) })
	out := make([]Step, len(ps))
	for i, p := range ps {
		out[i] = p.step
	}
	return out
}

func sign(x int64) int64 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// grantNouns are how a story speaks of a workload's grants.
type grantNouns struct {
	verb  string // history verb of the grant: acquire or campaign
	token string // "token" or "term"
	// got says a grant happened: "p2 acquired SKU-3".
	got func(p int, key string) string
}

var lockNouns = grantNouns{verb: history.FAcquire, token: "token",
	got: func(p int, key string) string { return fmt.Sprintf("%s acquired %s", pn(p), key) }}

var leaderNouns = grantNouns{verb: history.FCampaign, token: "term",
	got: func(p int, key string) string { return fmt.Sprintf("%s became leader of %s", pn(p), key) }}

// grantStep tells the grant's acquire, or that the history has none.
func (t *tale) grantStep(r *records, n grantNouns, key string, g grant, before when) (lockview.Op, bool) {
	o, ok := r.grantOp(n.verb, key, g, before)
	if !ok {
		t.missing(fmt.Sprintf("no %s of %s by %s%s that answered ok is in the history",
			n.verb, key, pn(g.process), withToken(g, n.token)))
		return o, false
	}
	t.add(at(o.Done), fmt.Sprintf("%s%s at %s", n.got(g.process, key), withToken(g, n.token), sec(o.Done)), histRef(o.Index))
	return o, true
}

// span is a story's window on one process: from what, to what.
type span struct {
	from, to         int64
	fromWhat, toWhat string // "its acquire", "its write"
}

func (s span) String() string {
	return fmt.Sprintf("between %s at %s and %s at %s", s.fromWhat, sec(s.from), s.toWhat, sec(s.to))
}

// faultSteps tells every fault that acted on p in the span, from its
// injection to its undoing, and the ensemble's faults in it; when none
// targeted p, it says so.
func (t *tale) faultSteps(r *records, p int, s span) {
	mine, ensemble := r.faultsOn(p, s.from, s.to)
	if len(mine) == 0 {
		t.missingAt(s.from, fmt.Sprintf("no fault targeting %s is recorded %s", pn(p), s))
	}
	for _, w := range append(mine, ensemble...) {
		t.add(at(w.From), fmt.Sprintf("%s at %s", faultStart(w), sec(w.From)), "nemesis "+w.F)
		if !r.undone(w) {
			t.add(at(w.To), fmt.Sprintf("the %s of %s was still in effect when the history ended at %s", w.F, faultTarget(w), sec(r.v.End)), "nemesis "+w.F)
			continue
		}
		sent, ok := r.undoSent(w)
		if !ok {
			sent = w.To
		}
		text := fmt.Sprintf("%s at %s", faultEnd(w), sec(sent))
		if sec(sent) != sec(w.To) {
			text += fmt.Sprintf(" (done at %s)", sec(w.To))
		}
		t.add(at(sent), text, "nemesis "+w.Stop)
	}
}

// sessionSteps tells what the records say of p's session in the span, or
// that they say nothing.
func (t *tale) sessionSteps(r *records, p int, key string, s span) {
	ins, gone := r.sessionEnds(p, key, s.from, s.to)
	if len(ins) == 0 && len(gone) == 0 {
		t.missingAt(s.from, fmt.Sprintf("no session event of %s and no observation of its session's end by the nemesis is recorded %s", pn(p), s))
		return
	}
	for i, e := range ins {
		if i == maxSessionSteps {
			t.add(at(e.Time), fmt.Sprintf("%s reported %s from %s to %s (see the history)",
				pn(p), plural(len(ins)-i, "more session event"), sec(e.Time), sec(s.to)), "")
			break
		}
		t.add(at(e.Time), fmt.Sprintf("%s at %s", instantText(e), sec(e.Time)), histRef(e.Index))
	}
	for _, g := range gone {
		t.add(at(g.Time), goneText(g), "nemesis "+history.FSessionGone)
	}
}

// entryStep tells an apply-log entry and the register's answer.
func (t *tale) entryStep(r *records, e register.Entry) *Step {
	w := r.entryTime(e)
	when := "; the records give no time for it"
	if w.ok {
		when = " at " + sec(w.ns)
	}
	g := grantOfEntry(e)
	var what string
	switch e.Op {
	case register.OpWrite:
		what = fmt.Sprintf("%s wrote n=%d to %s%s", pn(e.Process), e.Value, e.Key, withToken(g, "token"))
	case register.OpRead:
		what = fmt.Sprintf("%s read n=%d from %s%s", pn(e.Process), e.Value, e.Key, withToken(g, "token"))
	default:
		what = fmt.Sprintf("%s sent %s of %s%s", pn(e.Process), e.Op, e.Task, withToken(g, "term"))
	}
	if !w.ok {
		return t.add(w, fmt.Sprintf("%s: %s%s", what, answer(e), when), seqRef(e.Seq))
	}
	return t.add(w, fmt.Sprintf("%s%s: %s", what, when, answer(e)), seqRef(e.Seq))
}

// learnStep tells when p first reported, after the span, that its session
// expired or its lock of key was lost: whether it learnt of it only after
// acting.
func (t *tale) learnStep(r *records, p int, key string, s span) {
	for _, e := range r.instants[history.Process(p)] {
		if e.Time <= s.to || e.Value == nil {
			continue
		}
		if (e.F == history.FSession && e.Value.State == lockview.StateExpired) || (e.F == history.FLost && e.Key == key) {
			t.add(at(e.Time), fmt.Sprintf("%s at %s, after %s", instantText(e), sec(e.Time), s.toWhat), histRef(e.Index))
			return
		}
	}
}

// callSteps tells the history's side of a write or task call: when its
// worker sent it and how the history completed it, and a late reply that
// came after the operation had been recorded as unknown.
func (t *tale) callSteps(r *records, e register.Entry) {
	o, ok := r.callOp(e)
	if !ok {
		return
	}
	text := fmt.Sprintf("%s began its %s of %s at %s", pn(e.Process), e.Op, e.Task, sec(o.Invoke))
	if e.Op == register.OpWrite {
		text = fmt.Sprintf("%s began its write of n=%d to %s at %s", pn(e.Process), e.Value, e.Key, sec(o.Invoke))
	}
	switch o.Type {
	case history.Info:
		text += fmt.Sprintf("; the history recorded it as unknown (info) at %s: it had not answered in time", sec(o.Done))
	case "":
		text += "; the history has no completion for it"
	}
	t.add(at(o.Invoke), text, histRef(o.Index))
	if l, ok := r.lateOf(o, e.Value); ok {
		t.add(at(l.Time), fmt.Sprintf("%s's late reply to that %s arrived at %s: %s", pn(e.Process), e.Op, sec(l.Time), l.Value.State), histRef(l.Index))
	}
}
