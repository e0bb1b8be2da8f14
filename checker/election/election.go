// Package election holds the checkers of the election workload
// (docs/background.md#leader-election): candidates campaign for leadership
// of a service under /leaders/<service>, the leader's term is its node's
// czxid, and the leader runs tasks against the register's task table
// (claim, then complete with a result id), fenced by its term.
//
// Six questions, one checker each: did two processes lead at once by
// their own account (leader-overlap), is there one leader per term and do
// terms grow (term-order), did every task's effect run exactly once
// (exactly-once), did the register accept a task call under a term older
// than one it had already accepted (stale-term), did a leader send task
// calls after it knew it was deposed (demoted-work), and how long did
// takeovers take and how long did deposed leaders keep working
// (election-stats, figures only). The first two read the history, the
// next two the apply log, the last two both.
package election

import (
	"sort"
	"strconv"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Names of the election checkers.
const (
	NameLeaderOverlap = "leader-overlap"
	NameTermOrder     = "term-order"
	NameExactlyOnce   = "exactly-once"
	NameStaleTerm     = "stale-term"
	NameStats         = "election-stats"
	NameDemotedWork   = "demoted-work"
)

// DefaultGate is the gate of an election run: what the resource did
// (every task once, no stale term accepted). The client-view checkers
// inform; a leader that believes it leads after its session ended is the
// failure fencing exists for, not one by itself.
var DefaultGate = []string{NameExactlyOnce, NameStaleTerm}

// All returns the election workload's checkers (without integrity, which
// the suite adds to every workload). Those that can judge a run still
// going say how (SoFar): term-order's campaigns come in the order of
// their answers, and a break in it stays; a late call judged against
// its leader's notice stays late (a call recorded after the history
// read ends is not judged yet); stale-term is followed online instead,
// entry by entry (StaleTermStream, observe/progress).
func All() []checker.Checker {
	return []checker.Checker{
		{Name: NameLeaderOverlap, Check: CheckLeaderOverlap, SoFar: CheckLeaderOverlapSoFar},
		{Name: NameTermOrder, Check: CheckTermOrder, SoFar: CheckTermOrder},
		{Name: NameExactlyOnce, Check: CheckExactlyOnce, SoFar: CheckExactlyOnceSoFar},
		{Name: NameStaleTerm, Check: CheckStaleTerm},
		{Name: NameDemotedWork, Check: CheckDemotedWork, SoFar: CheckDemotedWork},
		{Name: NameStats, Check: CheckStats},
	}
}

// Ops of the register's task entries (register.Entry.Op), as the
// register writes them.
const (
	opInit     = "init"
	opClaim    = "claim"
	opComplete = "complete"
)

// How a leadership ended (Leadership.Ended).
const (
	EndDemoted   = "demoted"
	EndResign    = "resign"
	EndRetired   = "retired"
	EndCampaign  = "campaigned again"
	EndOfHistory = "end of history"
)

// Leadership is one process leading by its own account: from its
// campaign's ok until it learnt it was demoted, invoked a resign that did
// not fail, invoked an operation whose outcome stayed unknown (info or
// never answered: the process is retired, its state unknown from then),
// campaigned again, or the history ended.
type Leadership struct {
	Process history.Process `json:"process"`
	// Term is the campaign ok's token; nil when it carried none.
	Term    *int64 `json:"term"`
	Session string `json:"session,omitempty"`
	FromNS  int64  `json:"from_ns"`
	ToNS    int64  `json:"to_ns"`
	Ended   string `json:"ended"`
	// DemotedState is the reason of the demoted event that ended it.
	DemotedState string `json:"demoted_state,omitempty"`
	// Index is the campaign ok's index in the history.
	Index int64 `json:"index"`
}

// Leaderships lists every leadership of the history by start (and then
// history index). Demoted events of another term (their token differs
// from the campaign's) do not end a leadership. Exported for the report's
// timeline, so that it draws the leaderships these checkers judge.
func Leaderships(v lockview.View) []Leadership {
	perProc := map[history.Process][]int{}
	for i, o := range v.Ops {
		perProc[o.Process] = append(perProc[o.Process], i)
	}
	var out []Leadership
	for _, idx := range perProc {
		for n, i := range idx {
			o := v.Ops[i]
			if o.F != history.FCampaign || o.Type != history.OK {
				continue
			}
			l := Leadership{Process: o.Process, FromNS: o.Done, ToNS: v.End, Ended: EndOfHistory, Index: o.Index}
			if o.Value != nil {
				l.Session = o.Value.Session
			}
			if t, ok := o.Token(); ok {
				l.Term = &t
			}
			endByOps(&l, v.Ops, idx[n+1:])
			endByDemotion(&l, v.Instants)
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].FromNS != out[j].FromNS {
			return out[i].FromNS < out[j].FromNS
		}
		return out[i].Index < out[j].Index
	})
	return out
}

// endByOps ends l at the first later operation of its process that ends
// leadership: a resign that did not fail, an operation whose outcome is
// unknown, or a new campaign (all at their invocation).
func endByOps(l *Leadership, ops []lockview.Op, later []int) {
	for _, i := range later {
		o := ops[i]
		why := ""
		switch {
		case o.F == history.FCampaign:
			why = EndCampaign
		case o.F == history.FResign && o.Type != history.Fail:
			why = EndResign
		case o.Type == history.Info || o.Type == "":
			why = EndRetired
		}
		if why != "" {
			if o.Invoke < l.ToNS {
				l.ToNS, l.Ended = o.Invoke, why
			}
			return
		}
	}
}

// endByDemotion ends l at its process's first demoted event since its
// start, if that comes first.
func endByDemotion(l *Leadership, instants []lockview.Instant) {
	for _, e := range instants {
		if e.Process != l.Process || e.F != history.FDemoted || e.Time < l.FromNS {
			continue
		}
		if e.Value != nil && e.Value.Token != nil && l.Term != nil && *e.Value.Token != *l.Term {
			continue
		}
		if e.Time < l.ToNS || (e.Time == l.ToNS && l.Ended == EndOfHistory) {
			l.ToNS, l.Ended, l.DemotedState = e.Time, EndDemoted, ""
			if e.Value != nil {
				l.DemotedState = e.Value.State
			}
		}
		return
	}
}

// termText writes a term for messages.
func termText(t *int64) string {
	if t == nil {
		return "(no term)"
	}
	return strconv.FormatInt(*t, 10)
}
