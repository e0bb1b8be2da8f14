package election

import (
	"context"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// prefix is the records of in as a run still going at time at (run
// clock, ns) shows them: the history to then, and the apply log read
// after it (every entry committed by then).
func prefix(in checker.Input, at int64) checker.Input {
	out := in
	out.History, out.ApplyLog = nil, nil
	for _, e := range in.History {
		if e.Time <= at {
			out.History = append(out.History, e)
		}
	}
	for _, e := range in.ApplyLog {
		if e.Wall-in.StartWall <= at {
			out.ApplyLog = append(out.ApplyLog, e)
		}
	}
	return out
}

// TestSoFarNeverFlagsACorrectRun: no check of the run so far finds a
// violation in any prefix of correct runs (fenced, idempotent, with lost
// replies): a correct subject is never stopped.
func TestSoFarNeverFlagsACorrectRun(t *testing.T) {
	for seed := range uint64(8) {
		in := genInput(checktest.ElectionSpec{Seed: seed, Candidates: 3, Tasks: 20, Batch: 5, LostReplyShare: 0.2,
			Fencing: true, Idempotency: true})
		for i := 0; i < len(in.History); i += 3 {
			p := prefix(in, in.History[i].Time)
			for _, c := range All() {
				if c.SoFar == nil {
					continue
				}
				if r := c.SoFar(context.Background(), p); r.Valid == checker.Invalid {
					t.Fatalf("seed %d, %d of %d events: %s so far is invalid: %s", seed, i+1, len(in.History), c.Name, r.Error)
				}
			}
		}
	}
}

// TestExactlyOnceSoFar: a task not run yet is not missing while the run
// goes on; one run twice is found at its second run, and one a worker
// answered done without the register running it at that answer.
func TestExactlyOnceSoFar(t *testing.T) {
	in := cleanRun()
	in.StartWall = 1_000_000_000
	// The entries' commits, each between its call's invocation and
	// answer: the inits, t1's claim and complete, t2's.
	for i, at := range []int64{0, 0, 4, 6, 13, 15} {
		in.ApplyLog[i].Wall = in.StartWall + at*ms
	}
	// Before t2 was run: not missing yet.
	run(t, CheckExactlyOnceSoFar, prefix(in, 12*ms), checker.Valid)
	run(t, CheckExactlyOnce, prefix(in, 12*ms), checker.Invalid)
	run(t, CheckExactlyOnceSoFar, in, checker.Valid)

	// t2 answered done at 16 ms, but the register refused its complete.
	done := in
	done.ApplyLog = append([]register.Entry(nil), in.ApplyLog...)
	last := &done.ApplyLog[len(done.ApplyLog)-1]
	last.Accepted, last.Reason, last.Executions = false, "stale term", 0
	d := run(t, CheckExactlyOnceSoFar, done, checker.Invalid).Details.(ExactlyOnceDetails)
	if d.ViolationCounts[KindMissing] != 1 || d.Violations[0].ReportedDone == nil || *d.FirstViolationTimeNS != 16*ms {
		t.Fatalf("details %+v", d)
	}

	// t1 run a second time: found from the second accepted complete on.
	dup := (&checktest.Log{}).Init(checktest.TaskKey(1)).Init(checktest.TaskKey(2))
	dup.Task(opComplete, checktest.TaskKey(1), 100, 0, true, "", 1).Task(opComplete, checktest.TaskKey(1), 200, 1, true, "", 2)
	run(t, CheckExactlyOnceSoFar, checker.Input{ApplyLog: dup.Entries[:3]}, checker.Valid)
	d = run(t, CheckExactlyOnceSoFar, checker.Input{ApplyLog: dup.Entries}, checker.Invalid).Details.(ExactlyOnceDetails)
	if d.ViolationCounts[KindDuplicate] != 1 || d.ViolationCounts[KindMissing] != 0 {
		t.Fatalf("details %+v", d)
	}
}

// TestLeaderOverlapSoFar: an overlap a session-gone observation may
// still excuse (the fault on the earlier leader is still in effect) is
// not judged yet; once the fault's stop is invoked it is, and an
// observation that does come excuses it in the full check.
func TestLeaderOverlapSoFar(t *testing.T) {
	b := &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FCampaign, checktest.Service, campaignV(100, "0xa"), "")
	b.Add(0, 1, history.Invoke, history.FCampaign, checktest.Service, nil, "")
	b.Add(2, -1, history.Invoke, history.FPause, "", &history.Value{Target: "pause-app-leader"}, "")
	b.Add(2, -1, history.OK, history.FPause, "", &history.Value{TargetProcess: history.Int(0)}, "")
	b.Add(5, 1, history.OK, history.FCampaign, checktest.Service, campaignV(200, "0xb"), "")
	b.Op(6, 7, 1, history.OK, history.FScan, checktest.Service, &history.Value{N: history.Int64(2)}, "")
	running := checker.Input{History: append([]history.Event(nil), b.Events...)}
	run(t, CheckLeaderOverlapSoFar, running, checker.Valid)
	run(t, CheckLeaderOverlap, running, checker.Invalid)

	b.Add(9, -1, history.Invoke, history.FResume, "", nil, "")
	undone := checker.Input{History: append([]history.Event(nil), b.Events...)}
	run(t, CheckLeaderOverlapSoFar, undone, checker.Invalid)

	// The observation made during the pause excuses the same overlap.
	e := &checktest.Timeline{Events: append([]history.Event(nil), running.History...)}
	instant(e, 7, -1, history.FSessionGone, &history.Value{TargetProcess: history.Int(0), Session: "0xa", LastSeenNS: history.Int64(3 * ms)})
	e.Add(9, -1, history.Invoke, history.FResume, "", nil, "")
	run(t, CheckLeaderOverlapSoFar, checker.Input{History: e.Events}, checker.Valid)
	run(t, CheckLeaderOverlap, checker.Input{History: e.Events}, checker.Valid)
}

// TestStaleTermStream: fed entry by entry, stale-term finds the stale
// call at the entry that is it, and ends with the batch checker's
// verdict and evidence.
func TestStaleTermStream(t *testing.T) {
	k1, k2 := checktest.TaskKey(1), checktest.TaskKey(2)
	l := (&checktest.Log{}).Init(k1).Init(k2)
	l.Task(opClaim, k1, 100, 0, true, "", 0).Task(opClaim, k2, 200, 1, true, "", 0).Task(opComplete, k1, 100, 0, true, "", 1)
	l.Task(opComplete, k2, 200, 1, true, "", 1)
	s := NewStaleTermStream(10, 0)
	for i := range l.Entries {
		found := s.Add(&l.Entries[i])
		if want := l.Entries[i].Seq == 5; (len(found) == 1) != want || want && (found[0].Term != 100 || found[0].ServiceTerm != 200) {
			t.Fatalf("entry seq %d: found %+v", l.Entries[i].Seq, found)
		}
	}
	batch := CheckStaleTerm(context.Background(), checker.Input{ApplyLog: l.Entries})
	if r := s.Result(); r.Valid != checker.Invalid || batch.Valid != checker.Invalid ||
		r.Details.(StaleTermDetails).FirstViolationSeq != batch.Details.(StaleTermDetails).FirstViolationSeq || r.Error != batch.Error {
		t.Fatalf("stream %v %q, batch %v %q", r.Valid, r.Error, batch.Valid, batch.Error)
	}
	// Evidence kept: none, but the count is exact.
	s0 := NewStaleTermStream(0, 0)
	for i := range l.Entries {
		s0.Add(&l.Entries[i])
	}
	if d := s0.Result().Details.(StaleTermDetails); d.ViolationCount != 1 || len(d.Violations) != 0 || d.ViolationsOmitted != 1 {
		t.Fatalf("without evidence: %+v", d)
	}
}
