package story

import (
	"fmt"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

func TestGrantOverlap(t *testing.T) {
	r := &run{}
	r.acquire(900, 1000, 2, "SKU-1", 17, "")
	r.op(1030, 1040, 2, history.OK, history.FWrite, "SKU-1", &history.Value{N: history.Int64(1)}, &history.Value{N: history.Int64(1), Token: history.Int64(17)})
	r.entry(1036, register.OpWrite, "SKU-1", 2, 17, 1)
	r.acquire(1900, 2000, 5, "SKU-1", 19, "")
	r.op(2030, 2040, 5, history.OK, history.FWrite, "SKU-1", &history.Value{N: history.Int64(2)}, &history.Value{N: history.Int64(2), Token: history.Int64(19)})
	r.entry(2036, register.OpWrite, "SKU-1", 5, 19, 2)
	r.op(3000, 3010, 2, history.OK, history.FRelease, "SKU-1", nil, &history.Value{Token: history.Int64(17)})
	r.op(3100, 3110, 5, history.OK, history.FRelease, "SKU-1", nil, &history.Value{Token: history.Int64(19)})
	res := r.results(t, checker.Checker{Name: lock.NameGrantOverlap, Check: lock.CheckGrantOverlap})
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	s := find(t, told, lock.NameGrantOverlap, 0)
	wantSteps(t, s, []string{
		"p2 acquired SKU-1 with token 17 at 1.00 s.",
		"No fault targeting p2 is recorded between its acquire at 1.00 s and its release at 3.00 s.",
		"No session event of p2 and no observation of its session's end by the nemesis is recorded between its acquire at 1.00 s and its release at 3.00 s.",
		"p2 wrote n=1 to SKU-1 with token 17 at 1.04 s: accepted.",
		"p5 acquired SKU-1 with token 19 at 2.00 s, while p2 held it by its own account.",
		"p5 wrote n=2 to SKU-1 with token 19 at 2.04 s: accepted.",
		"p2 released SKU-1 at 3.00 s; the release answered ok at 3.01 s.",
		"By their own accounts p2 and p5 both held SKU-1 for 1.00 s, from p5's grant at 2.00 s to p2's release at 3.00 s.",
	})
	if got := marked(s); got != "p5 acquired SKU-1 with token 19 at 2.00 s, while p2 held it by its own account." {
		t.Errorf("marked = %q", got)
	}
}

func TestFalseRelease(t *testing.T) {
	r := &run{}
	r.acquire(900, 1000, 2, "SKU-1", 17, "0x2a")
	target := &history.Value{Target: "process 2 (pid 4242) holding SKU-1 with token 17"}
	r.op(1100, 1105, history.Nemesis, history.OK, history.FPause, "", &history.Value{Target: "pause-holder"}, nemesis(target, 4242, 2, ""))
	r.instant(4200, history.Nemesis, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(2), PID: 4242, Session: "0x2a", LastSeenNS: history.Int64(ms(4000))})
	r.op(5000, 5004, history.Nemesis, history.OK, history.FResume, "", nemesis(target, 4242, 2, ""), nemesis(target, 4242, 2, ""))
	r.op(5100, 5200, 2, history.OK, history.FRelease, "SKU-1", nil, &history.Value{Token: history.Int64(17)})
	res := r.results(t, checker.Checker{Name: lock.NameGrantOverlap, Check: lock.CheckGrantOverlap})
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	wantSteps(t, find(t, told, lock.NameGrantOverlap, 0), []string{
		"p2 acquired SKU-1 with token 17 at 1.00 s.",
		"The nemesis paused p2 (pid 4242) at 1.10 s.",
		"The nemesis saw the session 0x2a of p2 gone from every server at 4.20 s (last seen alive at 4.00 s).",
		"The nemesis resumed p2 (pid 4242) at 5.00 s.",
		"The apply log has no write to SKU-1 by p2 with token 17.",
		"p2 released SKU-1 at 5.10 s; the release answered ok at 5.20 s.",
		"p2's release answered ok 0.90 s after the nemesis had seen its session 0x2a gone (at 4.20 s): its lock node had gone with the session.",
	})
}

func TestTokenOrder(t *testing.T) {
	r := &run{}
	r.critical(900, 2, "SKU-1", 19, 0)
	r.op(1500, 1600, history.Nemesis, history.OK, history.FRogue, "", &history.Value{Target: "rogue-client"}, &history.Value{Target: "reset the sequence of /locks/inventory"})
	r.critical(1990, 5, "SKU-1", 17, 1)
	res := r.results(t, checker.Checker{Name: lock.NameTokenOrder, Check: lock.CheckTokenOrder})
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	s := find(t, told, lock.NameTokenOrder, 0)
	wantSteps(t, s, []string{
		"p2 acquired SKU-1 with token 19 at 0.91 s.",
		"The nemesis began rogue (reset the sequence of /locks/inventory) at 1.50 s.",
		"p5 acquired SKU-1 with token 17 at 2.00 s, not higher than p2's token 19 granted before it.",
		"p5 wrote n=2 to SKU-1 with token 17 at 2.00 s: accepted.",
	})
	if s.Title != "token order on SKU-1: token 17 after 19" {
		t.Errorf("title = %q", s.Title)
	}
}

func TestStaleTerm(t *testing.T) {
	r := &run{}
	r.acquireAs(history.FCampaign, 900, 1000, 3, "billing", 17)
	r.op(1500, 3500, 3, history.Info, history.FClaim, "t2", &history.Value{Token: history.Int64(17)}, nil)
	r.acquireAs(history.FCampaign, 2900, 3000, 5, "billing", 19)
	r.task(3500, register.OpComplete, "t1", 5, 19)
	r.task(4000, register.OpClaim, "t2", 3, 17)
	res := r.results(t, checker.Checker{Name: election.NameStaleTerm, Check: election.CheckStaleTerm})
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	s := find(t, told, election.NameStaleTerm, 0)
	wantSteps(t, s, []string{
		"p3 became leader of billing with term 17 at 1.00 s.",
		"No fault targeting p3 is recorded between its campaign at 1.00 s and its claim at 4.00 s.",
		"No session event of p3 and no observation of its session's end by the nemesis is recorded between its campaign at 1.00 s and its claim at 4.00 s.",
		"p3 began its claim of t2 at 1.50 s; the history recorded it as unknown (info) at 3.50 s: it had not answered in time.",
		"p5 became leader of billing with term 19 at 3.00 s.",
		"p5 sent complete of t1 with term 19 at 3.50 s: accepted.",
		"p3 sent claim of t2 with term 17 at 4.00 s: accepted.",
		"The register accepted p3's claim of t2 under term 17 after it had accepted term 19 from p5 (seq 1).",
	})
}

func (r *run) acquireAs(f string, t0, t1 float64, p history.Process, key string, tok int64) {
	r.op(t0, t1, p, history.OK, f, key, nil, &history.Value{Token: history.Int64(tok)})
}

func (r *run) task(t float64, op, task string, p int, term int64) {
	r.log = append(r.log, register.Entry{Seq: int64(len(r.log) + 1), Wall: wall0 + ms(t), Op: op, Service: "billing", Task: task,
		Token: term, HasToken: true, Process: p, Accepted: true, Mode: register.ModeOff, StateAfter: register.TaskRunning})
}

// A checker that lists more violations than are told, and omits more
// still: the counts say how many have no story.
func TestCountsAndLimit(t *testing.T) {
	d := fence.DoubleWriterDetails{ViolationCounts: map[string]int{fence.KindTokenRegression: 30}, ViolationsOmitted: 5}
	for i := range 25 {
		e := register.Entry{Seq: int64(i + 1), Op: register.OpWrite, Key: "SKU-1", Token: int64(i), HasToken: true, Process: i % 3, Accepted: true}
		d.Violations = append(d.Violations, fence.Violation{Kind: fence.KindTokenRegression, Key: "SKU-1", Entries: []register.Entry{e, e}})
	}
	res := checker.Results{Order: []string{fence.NameDoubleWriter, "mutex", lock.NameGrantOverlap}, Checkers: map[string]checker.Result{
		fence.NameDoubleWriter: {Valid: checker.Invalid, Details: d},
		"mutex":                {Valid: checker.Invalid},
		lock.NameGrantOverlap:  {Valid: checker.Valid, Details: lock.GrantOverlapDetails{}},
	}}
	told := Tell(Input{Results: res})
	if len(told.Stories) != DefaultMax {
		t.Errorf("%d stories, want %d", len(told.Stories), DefaultMax)
	}
	want := fmt.Sprint([]Count{{Checker: fence.NameDoubleWriter, Total: 30, Listed: 25, Told: 20},
		{Checker: "mutex", Note: "violations of this checker are not told as stories; see its evidence in results.json"}})
	if got := fmt.Sprint(told.Counts); got != want {
		t.Errorf("counts:\n got %s\nwant %s", got, want)
	}
	if told = Tell(Input{Results: res, Max: 3}); len(told.Stories) != 3 || told.Counts[0].Told != 3 {
		t.Errorf("Max 3: %d stories, counts %+v", len(told.Stories), told.Counts)
	}
}

// Evidence that cannot be read is said, not skipped.
func TestUnreadableEvidence(t *testing.T) {
	res := checker.Results{Checkers: map[string]checker.Result{
		fence.NameDoubleWriter: {Valid: checker.Invalid, Details: []int{1}},
	}}
	told := Tell(Input{Results: res})
	if len(told.Counts) != 1 || told.Counts[0].Note == "" {
		t.Fatalf("counts = %+v", told.Counts)
	}
}

func TestCountText(t *testing.T) {
	for _, tc := range []struct {
		c    Count
		want string
	}{
		{Count{Checker: "double-writer", Total: 17, Listed: 17, Told: 17}, "double-writer: 17 violations, every one told below."},
		{Count{Checker: "double-writer", Total: 230, Listed: 200, Told: 20},
			"double-writer: 230 violations; the first 20 in results.json are told below, 180 more listed there are not told, 30 more were not kept in results.json (the checker's evidence limit)."},
		{Count{Checker: "mutex", Note: "not told"}, "mutex: not told."},
		{Count{Checker: "token-order", Total: 1, Note: "its evidence could not be read: x"}, "token-order: its evidence could not be read: x; none of its 1 violation is told."},
	} {
		if got := tc.c.Text(); got != tc.want {
			t.Errorf("Text() =\n %q\nwant\n %q", got, tc.want)
		}
	}
}

// A history without the stale holder's acquire (a run killed and its
// history cut short, a hand-edited file): the story says it is missing
// and opens its window at the run's start.
func TestMissingAcquire(t *testing.T) {
	r := &run{}
	r.critical(1500, 5, "SKU-2", 19, 0)
	r.entry(1990, register.OpWrite, "SKU-2", 2, 17, 1)
	res := r.results(t, doubleWriter)
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	wantSteps(t, find(t, told, fence.NameDoubleWriter, 1), []string{
		"No acquire of SKU-2 by p2 with token 17 that answered ok is in the history.",
		"No read of SKU-2 by p2 before its write (seq 3) is in the apply log.",
		"No fault targeting p2 is recorded between the run's start at 0.00 s and its write at 1.99 s.",
		"No session event of p2 and no observation of its session's end by the nemesis is recorded between the run's start at 0.00 s and its write at 1.99 s.",
		"p5 acquired SKU-2 with token 19 at 1.51 s.",
		"p5 wrote n=1 to SKU-2 with token 19 at 1.51 s: accepted.",
		"p2 wrote n=1 to SKU-2 with token 17 at 1.99 s: accepted.",
		"The register accepted token 17 from p2 after it had accepted the higher token 19 from p5 (seq 2): a stale holder's write got through.",
	})
}
