package timeline

import (
	"cmp"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// procEvent is one thing a process did that starts or ends a tenure.
type procEvent struct {
	t    int64
	kind int
	key  string
	tok  *int64
}

const (
	evGrant      = iota // acquire ok, at its completion
	evRelease           // release, at its invocation: the holder gives up
	evLost              // the recipe reported the key lost
	evSessionEnd        // the session expired or was closed: every key lost
	evRetired           // an operation completed info: the process is retired
)

// lockTenures reads the lock workload's tenures from the history, by key.
// A tenure is the holder's own account: from its acquire's ok to its
// release's invocation, its lost event for the key, the end of its
// session, or a new grant of the same key. A retired holder's worker
// keeps running (it may be paused, and may still write when resumed), so
// its tenure goes on past the retirement, to its loss or, when it never
// reported one, to the last time it was heard from (after which the
// controller closed its input and it released at an unrecorded time).
// That is what makes a double write visible: the stale holder's tenure
// and write overlap the newer holder's.
func lockTenures(v lockview.View) map[string][]Tenure {
	perProc := map[history.Process][]procEvent{}
	heard := map[history.Process]int64{}
	hear := func(p history.Process, t int64) { heard[p] = max(heard[p], t) }
	for _, o := range v.Ops {
		hear(o.Process, o.Invoke)
		switch {
		case o.F == history.FAcquire && o.Type == history.OK:
			tok := tokenOf(o.Value)
			perProc[o.Process] = append(perProc[o.Process], procEvent{t: o.Done, kind: evGrant, key: o.Key, tok: tok})
		case o.F == history.FRelease:
			perProc[o.Process] = append(perProc[o.Process], procEvent{t: o.Invoke, kind: evRelease, key: o.Key})
		}
		if o.Type == "" {
			continue
		}
		hear(o.Process, o.Done)
		if o.Type == history.Info {
			perProc[o.Process] = append(perProc[o.Process], procEvent{t: o.Done, kind: evRetired})
		}
	}
	for _, e := range v.Instants {
		hear(e.Process, e.Time)
		switch {
		case e.F == history.FLost:
			perProc[e.Process] = append(perProc[e.Process], procEvent{t: e.Time, kind: evLost, key: e.Key})
		case e.F == history.FSession && e.Value != nil &&
			(e.Value.State == lockview.StateExpired || e.Value.State == lockview.StateClosed):
			perProc[e.Process] = append(perProc[e.Process], procEvent{t: e.Time, kind: evSessionEnd})
		}
	}
	out := map[string][]Tenure{}
	for p, evs := range perProc {
		slices.SortStableFunc(evs, func(a, b procEvent) int { return cmp.Compare(a.t, b.t) })
		for _, t := range walkProcess(p, evs, heard[p], v.End) {
			t.Faults = faultSpans(v.Faults, p, t.From, t.To)
			out[t.key] = append(out[t.key], t.Tenure)
		}
	}
	for k := range out {
		slices.SortStableFunc(out[k], func(a, b Tenure) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Process, b.Process))
		})
	}
	return out
}

// keyedTenure is a tenure before it is put in its lane.
type keyedTenure struct {
	Tenure
	key string
}

// walkProcess turns one process's events (by time) into its tenures.
func walkProcess(p history.Process, evs []procEvent, heard, end int64) []*keyedTenure {
	var out []*keyedTenure
	open := map[string]*keyedTenure{}
	retired := int64(-1)
	closeAt := func(key string, t int64, why string) {
		if o := open[key]; o != nil {
			o.To, o.Ended = t, why
			delete(open, key)
		}
	}
	for _, e := range evs {
		switch e.kind {
		case evGrant:
			closeAt(e.key, e.t, EndRegranted)
			t := &keyedTenure{Tenure: Tenure{Process: p, From: e.t, RetiredAt: -1}, key: e.key}
			if e.tok != nil {
				t.Token, t.HasToken = *e.tok, true
			}
			open[e.key] = t
			out = append(out, t)
		case evRelease:
			closeAt(e.key, e.t, EndReleased)
		case evLost:
			closeAt(e.key, e.t, EndLost)
		case evSessionEnd:
			for k := range open {
				closeAt(k, e.t, EndSession)
			}
		case evRetired:
			if retired < 0 {
				retired = e.t
			}
		}
	}
	for k := range open {
		if retired >= 0 {
			closeAt(k, max(heard, open[k].From), EndLastHeard)
		} else {
			closeAt(k, end, EndHistoryEnd)
		}
	}
	for _, t := range out {
		if retired >= t.From && retired < t.To {
			t.RetiredAt = retired
		}
	}
	return out
}

// electionTenures are the leaderships the election checkers judge
// (election.Leaderships), in one lane named after the service campaigned
// for; the token is the term. A leadership the checkers end where its
// leader was retired is drawn on, as a lock holder's is, to its demotion
// or the last time it was heard from: its worker kept running and may
// still act on the old term.
func electionTenures(v lockview.View) map[string][]Tenure {
	key := ""
	heard := map[history.Process]int64{}
	for _, o := range v.Ops {
		if o.F == history.FCampaign && key == "" {
			key = o.Key
		}
		heard[o.Process] = max(heard[o.Process], o.Invoke, o.Done)
	}
	for _, e := range v.Instants {
		heard[e.Process] = max(heard[e.Process], e.Time)
	}
	var ts []Tenure
	for _, l := range election.Leaderships(v) {
		t := Tenure{Process: l.Process, From: l.FromNS, To: l.ToNS, Ended: l.Ended, RetiredAt: -1}
		if l.Term != nil {
			t.Token, t.HasToken = *l.Term, true
		}
		if l.Ended == election.EndRetired {
			t.RetiredAt, t.To, t.Ended = l.ToNS, max(heard[l.Process], l.ToNS), EndLastHeard
			if d, ok := demotion(v, l); ok {
				t.To, t.Ended = d, election.EndDemoted
			}
		}
		t.Faults = faultSpans(v.Faults, l.Process, t.From, t.To)
		ts = append(ts, t)
	}
	return map[string][]Tenure{key: ts}
}

// demotion is when a retired leader learnt it was demoted (a demoted
// event of its term after its retirement).
func demotion(v lockview.View, l election.Leadership) (int64, bool) {
	for _, e := range v.Instants {
		if e.Process != l.Process || e.F != history.FDemoted || e.Time < l.ToNS {
			continue
		}
		if e.Value != nil && e.Value.Token != nil && l.Term != nil && *e.Value.Token != *l.Term {
			continue
		}
		return e.Time, true
	}
	return 0, false
}

// faultSpans are the client faults on process p (checker.FaultWindow's
// Process, the start's target_process) during [from, to].
func faultSpans(ws []checker.FaultWindow, p history.Process, from, to int64) []Span {
	var out []Span
	for _, w := range ws {
		if w.Process != p || w.To < from || w.From > to {
			continue
		}
		out = append(out, Span{F: w.F, From: max(w.From, from), To: min(w.To, to)})
	}
	return out
}

func tokenOf(v *history.Value) *int64 {
	if v == nil {
		return nil
	}
	return v.Token
}
