package election

import (
	"context"
	"fmt"
	"math"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
)

// Reasons an overlap is excused (Overlap.Excused).
const (
	ExcusedReportedLoss = "earlier leader reported its session expired before the other's campaign ok"
	ExcusedSessionGone  = "earlier leader's session seen gone by the nemesis"
)

// Overlap is a campaign ok of one process while another still led by its
// own account.
type Overlap struct {
	Leader       int    `json:"leader"`
	LeaderTerm   *int64 `json:"leader_term"`
	LeaderFromNS int64  `json:"leader_from_ns"`
	LeaderToNS   int64  `json:"leader_to_ns"`
	LeaderEnded  string `json:"leader_ended"`
	Other        int    `json:"other"`
	OtherTerm    *int64 `json:"other_term"`
	OtherFromNS  int64  `json:"other_from_ns"`
	// OverlapNS is how long both led.
	OverlapNS int64 `json:"overlap_ns"`
	// Excused says which session loss explains the overlap; empty when
	// none does.
	Excused string `json:"excused,omitempty"`
	Message string `json:"message"`
}

// LeaderOverlapDetails is the evidence of the leader-overlap checker.
type LeaderOverlapDetails struct {
	Leaderships     int       `json:"leaderships"`
	Overlaps        []Overlap `json:"overlaps"`
	OverlapCount    int       `json:"overlap_count"`
	OverlapsOmitted int       `json:"overlaps_omitted,omitempty"`
	// Excused lists the overlaps a session loss explains: not violations,
	// but the window in which a deposed leader still believed it led.
	Excused         []Overlap      `json:"excused"`
	ExcusedCount    int            `json:"excused_count"`
	ExcusedOmitted  int            `json:"excused_omitted,omitempty"`
	ExcusedByReason map[string]int `json:"excused_by_reason"`
	// FirstViolationTimeNS is the first unexcused overlap's start.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
}

// CheckLeaderOverlap finds two processes leading at once by their own
// account (see Leadership): another process's campaign answered ok while
// a leader had not yet learnt it was demoted, resigned, or been retired.
// ZooKeeper elects the next candidate only once the leader's node is
// gone, which a live session prevents; so only a loss of the earlier
// leader's session before the other's campaign ok excuses it: a session
// event "expired" it reported itself, or the nemesis' observation that
// its session was gone, last seen alive before that ok. Excused overlaps
// are listed too: they are how long a deposed leader went on believing.
func CheckLeaderOverlap(ctx context.Context, in checker.Input) checker.Result {
	return leaderOverlap(ctx, in, math.MaxInt64)
}

// CheckLeaderOverlapSoFar is leader-overlap on the records of a run
// still going (checker.Checker's SoFar). A leadership there ends no
// later than it will in the whole history (an operation still open ends
// it at its invocation, which its answer can only move later), so an
// overlap found stays one, unless a session-gone observation still to
// come excuses it. Only overlaps that no such observation can excuse are
// judged: those whose second campaign was answered before every fault
// still in effect began (lockview.Quiet).
func CheckLeaderOverlapSoFar(ctx context.Context, in checker.Input) checker.Result {
	var q lockview.Quiet
	for _, e := range in.History {
		q.Add(e)
	}
	return leaderOverlap(ctx, in, q.Since())
}

// leaderOverlap judges the overlaps whose second campaign was answered
// at or before settled (run clock).
func leaderOverlap(ctx context.Context, in checker.Input, settled int64) checker.Result {
	v := lockview.Of(in.History)
	ls := Leaderships(v)
	d := LeaderOverlapDetails{Leaderships: len(ls), Overlaps: []Overlap{}, Excused: []Overlap{}, ExcusedByReason: map[string]int{}}
	if len(ls) == 0 {
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: "no campaign answered ok: the history has no leader to judge"}
	}
	limit := in.Limit()
	for i, a := range ls {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		for _, b := range ls[i+1:] {
			if b.FromNS >= a.ToNS {
				break
			}
			if b.Process == a.Process || b.FromNS > settled {
				continue
			}
			o := overlapOf(v, a, b)
			if o.Excused != "" {
				d.ExcusedCount++
				d.ExcusedByReason[o.Excused]++
				checker.Keep(&d.Excused, &d.ExcusedOmitted, o, limit)
				continue
			}
			d.OverlapCount++
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, o.OtherFromNS)
			checker.Keep(&d.Overlaps, &d.OverlapsOmitted, o, limit)
		}
	}
	if d.OverlapCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d times a campaign answered ok while another process still led with no session loss to explain it; first: %s",
			d.OverlapCount, d.Overlaps[0].Message)}
}

// overlapOf describes b's campaign ok inside a's leadership, and what
// excuses it.
func overlapOf(v lockview.View, a, b Leadership) Overlap {
	o := Overlap{Leader: int(a.Process), LeaderTerm: a.Term, LeaderFromNS: a.FromNS, LeaderToNS: a.ToNS, LeaderEnded: a.Ended,
		Other: int(b.Process), OtherTerm: b.Term, OtherFromNS: b.FromNS, OverlapNS: min(a.ToNS, b.ToNS) - b.FromNS}
	session := v.SessionAt(a.Process, a.FromNS)
	if session.ID == "" {
		// The campaign's answer names the session it leads in.
		session.ID = a.Session
	}
	if _, ok := v.LossReported(a.Process, "", session, a.FromNS, b.FromNS); ok {
		o.Excused = ExcusedReportedLoss
	} else if _, ok := v.GoneBefore(a.Process, session, a.FromNS, b.FromNS); ok {
		o.Excused = ExcusedSessionGone
	}
	o.Message = fmt.Sprintf("process %d's campaign answered ok (term %s) at %s while process %d led (term %s since %s, until %s: %s)",
		b.Process, termText(b.Term), checker.Seconds(b.FromNS), a.Process, termText(a.Term), checker.Seconds(a.FromNS),
		checker.Seconds(a.ToNS), a.Ended)
	if o.Excused != "" {
		o.Message += "; excused: " + o.Excused
	}
	return o
}
