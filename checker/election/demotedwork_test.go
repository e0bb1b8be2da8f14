package election

import (
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

// demotedRun: process 0 leads with term 100 from 1 ms, starts completing
// t1 at 4 ms and reports its demotion at demotedAt ms; the register
// records its complete at callAt ms (the run starts at wall 1 s).
func demotedRun(demotedAt, callAt int64, notice func(*checktest.Timeline, int64)) checker.Input {
	b := &checktest.Timeline{}
	lead(b, 0, 1, 0, 100)
	b.Add(4, 0, history.Invoke, history.FComplete, checktest.TaskKey(1), checktest.TokV(100), "")
	notice(b, demotedAt)
	b.Add(callAt+1, 0, history.Fail, history.FComplete, checktest.TaskKey(1), checktest.TokV(100), "rejected: stale term")
	l := &checktest.Log{}
	l.Init(checktest.TaskKey(1)).Task(opComplete, checktest.TaskKey(1), 100, 0, true, "", 1)
	l.Entries[1].Wall = 1_000_000_000 + callAt*ms
	return checker.Input{History: b.Events, ApplyLog: l.Entries, StartWall: 1_000_000_000}
}

func demotedNotice(b *checktest.Timeline, at int64) {
	instant(b, at, 0, history.FDemoted, demoted(100, "expired"))
}

func expiredNotice(b *checktest.Timeline, at int64) {
	instant(b, at, 0, history.FSession, &history.Value{State: "expired"})
}

func TestDemotedWork(t *testing.T) {
	// The call reached the register 600 ms after the demotion: caught.
	r := run(t, CheckDemotedWork, demotedRun(10, 610, demotedNotice), checker.Invalid)
	d := r.Details.(DemotedWorkDetails)
	if d.Notices != 1 || d.ViolationCount != 1 || d.Violations[0].LateNS != 600*ms || *d.FirstViolationTimeNS != 610*ms {
		t.Fatalf("details %+v", d)
	}
	// A session expiry is a notice too (a recipe that ignores it and
	// reports no demotion).
	run(t, CheckDemotedWork, demotedRun(10, 610, expiredNotice), checker.Invalid)
	// Sent before it knew: the register recorded it before the report, or
	// within the slack after it.
	run(t, CheckDemotedWork, demotedRun(500, 490, demotedNotice), checker.Valid)
	run(t, CheckDemotedWork, demotedRun(500, 550, demotedNotice), checker.Valid)
	// A demotion of another term is not this leadership's.
	other := func(b *checktest.Timeline, at int64) { instant(b, at, 0, history.FDemoted, demoted(99, "expired")) }
	if d := run(t, CheckDemotedWork, demotedRun(10, 610, other), checker.Valid).Details.(DemotedWorkDetails); d.Notices != 0 {
		t.Fatalf("notices %d", d.Notices)
	}
	// Without the run's start the apply log cannot be placed: unknown.
	in := demotedRun(10, 610, demotedNotice)
	in.StartWall = 0
	run(t, CheckDemotedWork, in, checker.Unknown)
}

func TestDemotedWorkNextLeadership(t *testing.T) {
	// Process 0 is demoted at 10 ms, campaigns again at 20 ms and wins the
	// same term (a recipe without terms): its call at 600 ms belongs to
	// the new leadership.
	b := &checktest.Timeline{}
	lead(b, 0, 1, 0, 100)
	demotedNotice(b, 10)
	lead(b, 20, 21, 0, 100)
	l := &checktest.Log{}
	l.Init(checktest.TaskKey(1)).Task(opComplete, checktest.TaskKey(1), 100, 0, true, "", 1)
	l.Entries[1].Wall = 1_000_000_000 + 600*ms
	run(t, CheckDemotedWork, checker.Input{History: b.Events, ApplyLog: l.Entries, StartWall: 1_000_000_000}, checker.Valid)
}
