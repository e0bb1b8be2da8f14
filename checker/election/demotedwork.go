package election

import (
	"context"
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// DemotedWorkSlack is how much later than a leader's own report of its
// demotion the register may record a call the leader sent before it: the
// register stamps a call when its handler runs, which scheduling on a
// loaded machine can delay by milliseconds, never by a tenth of a second
// in any run measured. A leader that keeps working after its demotion
// sends its call when the task's work is done, a work time later.
const DemotedWorkSlack = 100 * time.Millisecond

// Notice is a process's own report that its leadership ended: a demoted
// event for its term, or a session event saying the session it led in is
// gone (expired, closed, or replaced by another).
type Notice struct {
	Process int    `json:"process"`
	Term    *int64 `json:"term"`
	TimeNS  int64  `json:"time_ns"`
	What    string `json:"what"`
}

// LateCall is a task call the register received from a leader after it
// had reported its leadership over.
type LateCall struct {
	Notice Notice         `json:"notice"`
	Entry  register.Entry `json:"entry"`
	// AfterNS is when the register recorded the call, on the run's clock;
	// LateNS how long after the notice.
	AfterNS int64  `json:"after_ns"`
	LateNS  int64  `json:"late_ns"`
	Message string `json:"message"`
}

// DemotedWorkDetails is the evidence of the demoted-work checker.
type DemotedWorkDetails struct {
	// Notices counts the leaderships that ended by their leader's own
	// report: the cases judged.
	Notices          int        `json:"notices"`
	SlackNS          int64      `json:"slack_ns"`
	Violations       []LateCall `json:"violations"`
	ViolationCount   int        `json:"violation_count"`
	ViolationOmitted int        `json:"violations_omitted,omitempty"`
	// FirstViolationTimeNS is the first late call's record time.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
	Reason               string `json:"reason,omitempty"`
}

// CheckDemotedWork asks whether a leader kept working after it knew it
// was no longer leader: a task executor must be cancellable, and the
// runbook asks whether the old leader went on after Disconnected or
// Expired (docs/background.md#leader-election,
// docs/background.md#what-the-runbook-asks). For every
// leadership its process reported over (a demoted event, or its session
// expired, closed or replaced), any claim or complete of that term from
// that process which the register recorded more than DemotedWorkSlack
// after the report, and before the process campaigned again, is a call
// sent by a leader that knew: its work was not cancelled, or it retried
// after its demotion. A paused leader that sends before it learns of its
// demotion is not one (fencing is the answer to that). The apply log's
// wall clock is placed on the run's clock by the run's start; without
// either it cannot judge and says unknown.
func CheckDemotedWork(ctx context.Context, in checker.Input) checker.Result {
	if ctx.Err() != nil {
		return checker.Cancelled(ctx)
	}
	v := lockview.Of(in.History)
	d := DemotedWorkDetails{SlackNS: DemotedWorkSlack.Nanoseconds(), Violations: []LateCall{}}
	notices := leaderNotices(v)
	d.Notices = len(notices)
	if len(notices) == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	if in.StartWall == 0 {
		d.Reason = "the run's start wall clock is not known: the apply log cannot be placed on the history's clock"
		return checker.Result{Valid: checker.Unknown, Details: d, Error: d.Reason}
	}
	limit := in.Limit()
	for _, n := range notices {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		for _, e := range in.ApplyLog {
			lc, late := lateCall(in, n, e)
			if !late {
				continue
			}
			d.ViolationCount++
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, lc.AfterNS)
			checker.Keep(&d.Violations, &d.ViolationOmitted, lc, limit)
		}
	}
	if d.ViolationCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d task calls reached the register after their leader reported its leadership over; first: %s",
			d.ViolationCount, d.Violations[0].Message)}
}

// noticeWindow is a notice and the end of the window in which its
// process's calls of that term are judged (its next campaign's invocation).
type noticeWindow struct {
	Notice
	until int64
}

// leaderNotices finds, for every leadership with a term, the first report
// by its process that it was over.
func leaderNotices(v lockview.View) []noticeWindow {
	var out []noticeWindow
	for _, l := range Leaderships(v) {
		if l.Term == nil {
			continue
		}
		n, ok := noticeOf(v, l)
		if !ok {
			continue
		}
		w := noticeWindow{Notice: n, until: v.End}
		for _, o := range v.Ops {
			if o.Process == l.Process && o.F == history.FCampaign && o.Invoke > l.FromNS {
				w.until = min(w.until, o.Invoke)
			}
		}
		out = append(out, w)
	}
	return out
}

// noticeOf is the first report by l's process, after l began, that l is
// over: its demoted event, or the loss of the session it led in.
func noticeOf(v lockview.View, l Leadership) (Notice, bool) {
	session := v.SessionAt(l.Process, l.FromNS)
	if session.ID == "" {
		session.ID = l.Session
	}
	for _, e := range v.Instants {
		if e.Process != l.Process || e.Time < l.FromNS || e.Value == nil {
			continue
		}
		what := ""
		switch {
		case e.F == history.FDemoted && (e.Value.Token == nil || *e.Value.Token == *l.Term):
			what = "demoted (" + e.Value.State + ")"
		case e.F == history.FSession && (e.Value.State == lockview.StateExpired || e.Value.State == lockview.StateClosed) &&
			session.May(e.Value.Session):
			what = "session " + e.Value.State
		case e.F == history.FSession && e.Value.State == lockview.StateConnected && session.ID != "" &&
			e.Value.Session != "" && !lockview.SameSession(e.Value.Session, session.ID):
			what = "connected in another session"
		}
		if what != "" {
			return Notice{Process: int(l.Process), Term: l.Term, TimeNS: e.Time, What: what}, true
		}
	}
	return Notice{}, false
}

// lateCall says whether entry e is a call of n's process and term that
// the register recorded more than the slack after n, before the process
// campaigned again.
func lateCall(in checker.Input, n noticeWindow, e register.Entry) (LateCall, bool) {
	if !isTaskCall(e) || e.Process != n.Process || !e.HasToken || e.Token != *n.Term {
		return LateCall{}, false
	}
	at := afterStart(in, e)
	if at == nil || *at <= n.TimeNS+DemotedWorkSlack.Nanoseconds() || *at > n.until {
		return LateCall{}, false
	}
	lc := LateCall{Notice: n.Notice, Entry: e, AfterNS: *at, LateNS: *at - n.TimeNS}
	verdict := "refused: " + e.Reason
	if e.Accepted {
		verdict = "accepted"
	}
	lc.Message = fmt.Sprintf("process %d reported %s at %s, and the register received its %s of %s under term %d %s later (%s)",
		n.Process, n.What, checker.Seconds(n.TimeNS), e.Op, taskOf(e), e.Token,
		time.Duration(lc.LateNS).Round(time.Millisecond), verdict)
	return lc, true
}
