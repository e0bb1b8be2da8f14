package election

import (
	"context"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

const ms = 1_000_000

func campaignV(term int64, session string) *history.Value {
	return &history.Value{Token: history.Int64(term), Session: session}
}

// lead is p's campaign, invoked at from and answered ok at to (ms).
func lead(b *checktest.Timeline, from, to int64, p int, term int64) *checktest.Timeline {
	return b.Op(from, to, p, history.OK, history.FCampaign, checktest.Service, campaignV(term, ""), "")
}

func instant(b *checktest.Timeline, at int64, p int, f string, v *history.Value) *checktest.Timeline {
	b.Add(at, p, history.Invoke, f, "", v, "")
	return b.Add(at, p, history.OK, f, "", v, "")
}

func demoted(term int64, why string) *history.Value {
	return &history.Value{Token: history.Int64(term), State: why}
}

// cleanRun: process 0 leads with term 100, completes t1 and resigns;
// process 1 leads with term 200 and completes t2.
func cleanRun() checker.Input {
	b := &checktest.Timeline{}
	lead(b, 0, 1, 0, 100)
	b.Add(0, 1, history.Invoke, history.FCampaign, checktest.Service, nil, "")
	b.Op(2, 3, 0, history.OK, history.FScan, checktest.Service, &history.Value{N: history.Int64(2)}, "")
	b.Op(4, 5, 0, history.OK, history.FClaim, checktest.TaskKey(1), checktest.TokV(100), "")
	b.Op(6, 7, 0, history.OK, history.FComplete, checktest.TaskKey(1), checktest.TokV(100), "")
	b.Op(8, 9, 0, history.OK, history.FResign, checktest.Service, nil, "")
	b.Add(12, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, ""), "")
	b.Op(13, 14, 1, history.OK, history.FClaim, checktest.TaskKey(2), checktest.TokV(200), "")
	b.Op(15, 16, 1, history.OK, history.FComplete, checktest.TaskKey(2), checktest.TokV(200), "")
	l := &checktest.Log{}
	l.Init(checktest.TaskKey(1)).Init(checktest.TaskKey(2))
	l.Task(opClaim, checktest.TaskKey(1), 100, 0, true, "", 0).Task(opComplete, checktest.TaskKey(1), 100, 0, true, "", 1)
	l.Task(opClaim, checktest.TaskKey(2), 200, 1, true, "", 0).Task(opComplete, checktest.TaskKey(2), 200, 1, true, "", 1)
	return checker.Input{History: b.Events, ApplyLog: l.Entries}
}

func run(t *testing.T, c func(context.Context, checker.Input) checker.Result, in checker.Input, want checker.Validity) checker.Result {
	t.Helper()
	r := c(context.Background(), in)
	if r.Valid != want {
		t.Fatalf("valid = %v, want %v (error %q, details %+v)", r.Valid, want, r.Error, r.Details)
	}
	if want != checker.Valid && r.Error == "" {
		t.Fatalf("%v without an error", r.Valid)
	}
	return r
}

func TestCleanRunValid(t *testing.T) {
	in := cleanRun()
	for _, c := range All() {
		t.Run(c.Name, func(t *testing.T) { run(t, c.Check, in, checker.Valid) })
	}
	d := run(t, CheckStats, in, checker.Valid).Details.(StatsDetails)
	if d.Leaderships != 2 || d.LeaderChanges != 1 || d.TakeoverMS.Count != 1 || d.TakeoverMS.Min != 4 || d.StaleCompletes != 0 {
		t.Fatalf("stats %+v", d)
	}
	if err := checker.ValidateGate(DefaultGate, All()); err != nil {
		t.Fatal(err)
	}
}

func TestLeaderOverlap(t *testing.T) {
	b := &checktest.Timeline{}
	lead(b, 0, 1, 0, 100)
	b.Add(0, 1, history.Invoke, history.FCampaign, checktest.Service, nil, "")
	b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, ""), "")
	b.Op(10, 11, 0, history.OK, history.FResign, checktest.Service, nil, "")
	r := run(t, CheckLeaderOverlap, checker.Input{History: b.Events}, checker.Invalid)
	d := r.Details.(LeaderOverlapDetails)
	if d.OverlapCount != 1 || d.Overlaps[0].Leader != 0 || d.Overlaps[0].Other != 1 || d.Overlaps[0].OverlapNS != 5*ms ||
		d.Overlaps[0].LeaderEnded != EndResign || *d.FirstViolationTimeNS != 5*ms {
		t.Fatalf("details %+v", d)
	}
}

func TestLeaderOverlapEndsAtDemotionDuringCall(t *testing.T) {
	// The demoted event arrives while a complete is in flight: it pairs
	// on its own and ends the leadership before the other's ok.
	b := &checktest.Timeline{}
	lead(b, 0, 1, 0, 100)
	b.Add(0, 1, history.Invoke, history.FCampaign, checktest.Service, nil, "")
	b.Add(2, 0, history.Invoke, history.FComplete, checktest.TaskKey(1), checktest.TokV(100), "")
	instant(b, 3, 0, history.FDemoted, demoted(100, "expired"))
	b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, ""), "")
	b.Add(6, 0, history.OK, history.FComplete, checktest.TaskKey(1), checktest.TokV(100), "")
	d := run(t, CheckLeaderOverlap, checker.Input{History: b.Events}, checker.Valid).Details.(LeaderOverlapDetails)
	if d.Leaderships != 2 || d.ExcusedCount != 0 {
		t.Fatalf("details %+v", d)
	}
	s := run(t, CheckStats, checker.Input{History: b.Events}, checker.Valid).Details.(StatsDetails)
	if s.StaleCompletes != 1 || s.StaleRunMS.Max != 3 || s.Demotions["expired"] != 1 || s.TakeoverMS.Min != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLeaderOverlapExcused(t *testing.T) {
	base := func() *checktest.Timeline {
		b := &checktest.Timeline{}
		b.Op(0, 1, 0, history.OK, history.FCampaign, checktest.Service, campaignV(100, "0xa"), "")
		b.Add(0, 1, history.Invoke, history.FCampaign, checktest.Service, nil, "")
		return b
	}
	t.Run("reported", func(t *testing.T) {
		b := base()
		instant(b, 3, 0, history.FSession, &history.Value{State: "expired", Session: "0xa"})
		b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, "0xb"), "")
		instant(b, 8, 0, history.FDemoted, demoted(100, "expired"))
		d := run(t, CheckLeaderOverlap, checker.Input{History: b.Events}, checker.Valid).Details.(LeaderOverlapDetails)
		if d.ExcusedCount != 1 || d.Excused[0].Excused != ExcusedReportedLoss || d.Excused[0].OverlapNS != 3*ms {
			t.Fatalf("details %+v", d)
		}
	})
	t.Run("gone", func(t *testing.T) {
		b := base()
		b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, "0xb"), "")
		gone := &history.Value{TargetProcess: history.Int(0), Session: "0xa", LastSeenNS: history.Int64(2 * ms)}
		instant(b, 7, -1, history.FSessionGone, gone)
		instant(b, 8, 0, history.FDemoted, demoted(100, "expired"))
		d := run(t, CheckLeaderOverlap, checker.Input{History: b.Events}, checker.Valid).Details.(LeaderOverlapDetails)
		if d.ExcusedCount != 1 || d.Excused[0].Excused != ExcusedSessionGone {
			t.Fatalf("details %+v", d)
		}
	})
	t.Run("other session gone excuses nothing", func(t *testing.T) {
		b := base()
		b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, "0xb"), "")
		gone := &history.Value{TargetProcess: history.Int(0), Session: "0xc", LastSeenNS: history.Int64(2 * ms)}
		instant(b, 7, -1, history.FSessionGone, gone)
		instant(b, 8, 0, history.FDemoted, demoted(100, "expired"))
		run(t, CheckLeaderOverlap, checker.Input{History: b.Events}, checker.Invalid)
	})
}

func TestEmptyHistoryUnknown(t *testing.T) {
	run(t, CheckLeaderOverlap, checker.Input{}, checker.Unknown)
	run(t, CheckTermOrder, checker.Input{}, checker.Unknown)
	run(t, CheckExactlyOnce, checker.Input{}, checker.Unknown)
	run(t, CheckStaleTerm, checker.Input{}, checker.Unknown)
	run(t, CheckStats, checker.Input{}, checker.Valid)
}

func TestTermOrder(t *testing.T) {
	two := func(t0, t1 int64) checker.Input {
		b := &checktest.Timeline{}
		lead(b, 0, 1, 0, t0)
		b.Op(2, 3, 0, history.OK, history.FResign, checktest.Service, nil, "")
		lead(b, 4, 5, 1, t1)
		return checker.Input{History: b.Events}
	}
	d := run(t, CheckTermOrder, two(100, 100), checker.Invalid).Details.(TermOrderDetails)
	if d.ViolationCounts[KindSharedTerm] != 1 || d.Violations[0].Earlier.Process != 0 || d.Violations[0].Later.Process != 1 {
		t.Fatalf("details %+v", d)
	}
	d = run(t, CheckTermOrder, two(200, 100), checker.Invalid).Details.(TermOrderDetails)
	if d.ViolationCounts[KindTermRegression] != 1 || *d.Violations[0].Earlier.Term != 200 || *d.FirstViolationTimeNS != 5*ms {
		t.Fatalf("details %+v", d)
	}
	run(t, CheckTermOrder, two(100, 200), checker.Valid)
	b := &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FCampaign, checktest.Service, &history.Value{}, "")
	run(t, CheckTermOrder, checker.Input{History: b.Events}, checker.Unknown)
}

func TestExactlyOnce(t *testing.T) {
	k1, k2 := checktest.TaskKey(1), checktest.TaskKey(2)
	t.Run("duplicate", func(t *testing.T) {
		l := (&checktest.Log{}).Init(k1).Init(k2)
		l.Task(opComplete, k1, 100, 0, true, "", 1).Task(opComplete, k2, 100, 0, true, "", 1).Task(opComplete, k1, 200, 1, true, "", 2)
		d := run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries, StartWall: 1_000_000_000}, checker.Invalid).Details.(ExactlyOnceDetails)
		v := d.Violations[0]
		if d.ViolationCounts[KindDuplicate] != 1 || v.Task != k1 || v.Executions != 2 || len(v.Entries) != 2 ||
			v.Seqs[1] != 5 || v.Terms[1] != 200 || v.Processes[1] != 1 || d.FirstViolationSeq != 5 || *d.FirstViolationAfterNS != 5000 {
			t.Fatalf("details %+v", d)
		}
	})
	t.Run("register count", func(t *testing.T) {
		// The register's own count is believed when higher.
		l := (&checktest.Log{}).Init(k1).Task(opComplete, k1, 100, 0, true, "", 2)
		run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Invalid)
	})
	t.Run("missing", func(t *testing.T) {
		l := (&checktest.Log{}).Init(k1).Init(k2)
		l.Task(opClaim, k1, 100, 0, true, "", 0).Task(opComplete, k2, 100, 0, true, "", 1).
			Task(opComplete, k1, 50, 0, false, "stale term", 0)
		d := run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Invalid).Details.(ExactlyOnceDetails)
		if d.ViolationCounts[KindMissing] != 1 || d.Violations[0].Task != k1 || len(d.Violations[0].Entries) != 2 || d.ExecutedOnce != 1 {
			t.Fatalf("details %+v", d)
		}
	})
	t.Run("never touched", func(t *testing.T) {
		l := (&checktest.Log{}).Init(k1).Init(k2).Task(opComplete, k2, 100, 0, true, "", 1)
		run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Invalid)
	})
	t.Run("refused done", func(t *testing.T) {
		l := (&checktest.Log{}).Init(k1).Task(opComplete, k1, 100, 0, true, "", 1)
		l.Entries[1].ReplyDropped = true
		l.Task(opComplete, k1, 100, 0, false, "done", 1)
		d := run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Valid).Details.(ExactlyOnceDetails)
		if d.RefusedDone != 1 || d.RepliesDropped != 1 {
			t.Fatalf("details %+v", d)
		}
	})
	t.Run("no init", func(t *testing.T) {
		l := (&checktest.Log{}).Task(opComplete, k1, 100, 0, true, "", 1)
		run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Unknown)
	})
	t.Run("limit", func(t *testing.T) {
		l := (&checktest.Log{}).Init(k1).Init(k2)
		l.Task(opComplete, k1, 1, 0, true, "", 1).Task(opComplete, k1, 1, 0, true, "", 2)
		l.Task(opComplete, k2, 1, 0, true, "", 1).Task(opComplete, k2, 1, 0, true, "", 2)
		d := run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries, MaxViolations: 1}, checker.Invalid).Details.(ExactlyOnceDetails)
		if len(d.Violations) != 1 || d.ViolationsOmitted != 1 || d.ViolationCounts[KindDuplicate] != 2 {
			t.Fatalf("details %+v", d)
		}
	})
}

// TestExactlyOnceGrownTable: a table grown by several inits, each
// listing its chunk as the register logs it, is judged whole: a task of
// a later chunk never run is missing, a chunk presented again (a retried
// init) adds no task, and a run still going is not blamed for tasks not
// run yet.
func TestExactlyOnceGrownTable(t *testing.T) {
	k := checktest.TaskKey
	l := (&checktest.Log{}).InitTable(k(1), k(2))
	l.Task(opComplete, k(1), 100, 0, true, "", 1).Task(opComplete, k(2), 100, 0, true, "", 1)
	l.InitTable(k(3), k(4)).InitTable(k(3), k(4))
	l.Task(opComplete, k(3), 200, 1, true, "", 1)
	d := run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Invalid).Details.(ExactlyOnceDetails)
	if d.InitEntries != 3 || d.Tasks != 4 || d.TasksFromCalls != 0 || d.ViolationCounts[KindMissing] != 1 ||
		d.Violations[0].Task != k(4) || d.ExecutedOnce != 3 {
		t.Fatalf("details %+v", d)
	}
	run(t, CheckExactlyOnceSoFar, checker.Input{ApplyLog: l.Entries}, checker.Valid)
	l.Task(opComplete, k(4), 200, 1, true, "", 1)
	d = run(t, CheckExactlyOnce, checker.Input{ApplyLog: l.Entries}, checker.Valid).Details.(ExactlyOnceDetails)
	if d.Tasks != 4 || d.ExecutedOnce != 4 {
		t.Fatalf("details %+v", d)
	}
}

func TestStaleTerm(t *testing.T) {
	k1, k2 := checktest.TaskKey(1), checktest.TaskKey(2)
	l := (&checktest.Log{}).Init(k1).Init(k2)
	l.Task(opClaim, k1, 100, 0, true, "", 0).Task(opClaim, k2, 200, 1, true, "", 0).Task(opComplete, k1, 100, 0, true, "", 1)
	d := run(t, CheckStaleTerm, checker.Input{ApplyLog: l.Entries}, checker.Invalid).Details.(StaleTermDetails)
	v := d.Violations[0]
	if d.ViolationCount != 1 || v.Seq != 5 || v.Term != 100 || v.ServiceTerm != 200 || v.SetBySeq != 4 || v.SetByProcess != 1 ||
		len(v.Entries) != 2 || d.FirstViolationSeq != 5 {
		t.Fatalf("details %+v", d)
	}
	// Fenced: the register refused it.
	l.Entries[4].Accepted, l.Entries[4].Reason = false, "stale term"
	d = run(t, CheckStaleTerm, checker.Input{ApplyLog: l.Entries}, checker.Valid).Details.(StaleTermDetails)
	if d.FencedOff != 1 {
		t.Fatalf("details %+v", d)
	}
	// Another service's term is no reason.
	l.Entries[4].Accepted, l.Entries[4].Reason = true, ""
	l.Entries[3].Service = "payroll"
	run(t, CheckStaleTerm, checker.Input{ApplyLog: l.Entries}, checker.Valid)
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := cleanRun()
	for _, c := range All() {
		if c.Name == NameStats {
			continue
		}
		if r := c.Check(ctx, in); r.Valid != checker.Unknown {
			t.Fatalf("%s: %v with a cancelled context", c.Name, r.Valid)
		}
	}
}

func TestRetiredLeaderEndsAtUnknownCall(t *testing.T) {
	// A complete whose outcome stayed unknown retires the leader: its
	// state is unknown from that call's invocation.
	b := &checktest.Timeline{}
	lead(b, 0, 1, 0, 100)
	b.Add(0, 1, history.Invoke, history.FCampaign, checktest.Service, nil, "")
	b.Op(2, 4, 0, history.Info, history.FComplete, checktest.TaskKey(1), checktest.TokV(100), "timeout")
	b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, ""), "")
	run(t, CheckLeaderOverlap, checker.Input{History: b.Events}, checker.Valid)
	s := run(t, CheckStats, checker.Input{History: b.Events}, checker.Valid).Details.(StatsDetails)
	if s.EndedBy[EndRetired] != 1 || s.TakeoverMS.Min != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// TestMissingReportedDone: a task the register never ran, which a worker
// answered done, is missing with that answer as its evidence and time.
func TestMissingReportedDone(t *testing.T) {
	in := cleanRun()
	// The register refused t2's complete as stale; the worker said ok.
	in.ApplyLog = in.ApplyLog[:len(in.ApplyLog)-1]
	in.ApplyLog = append(in.ApplyLog, in.ApplyLog[len(in.ApplyLog)-1])
	last := &in.ApplyLog[len(in.ApplyLog)-1]
	last.Seq, last.Op, last.Accepted, last.Reason, last.StateAfter = last.Seq+1, opComplete, false, "stale_term", "RUNNING"
	d := run(t, CheckExactlyOnce, in, checker.Invalid).Details.(ExactlyOnceDetails)
	if d.ViolationCounts[KindMissing] != 1 {
		t.Fatalf("violations %+v", d.ViolationCounts)
	}
	v := d.Violations[0]
	if v.Task != checktest.TaskKey(2) || v.ReportedDone == nil || v.ReportedDone.Process != 1 || v.ReportedDone.TimeNS != 16*ms ||
		*v.ReportedDone.Term != 200 || d.FirstViolationTimeNS == nil || *d.FirstViolationTimeNS != 16*ms {
		t.Fatalf("violation %+v, first %v", v, d.FirstViolationTimeNS)
	}
}
