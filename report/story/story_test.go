package story

import (
	"context"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// wall0 is the hand-made runs' start on the wall clock.
const wall0 = int64(1_700_000_000_000_000_000)

// run builds a hand-made history and apply log; times are in ms on the
// run clock.
type run struct {
	h    []history.Event
	log  []register.Entry
	last map[string]register.Entry // each key's last write
}

func ms(t float64) int64 { return int64(t * 1e6) }

func (r *run) ev(t float64, p history.Process, typ history.Type, f, key string, v *history.Value) {
	r.h = append(r.h, history.Event{Index: int64(len(r.h)), Time: ms(t), Process: p, Type: typ, F: f, Key: key, Value: v})
}

// op records an invocation at t0 and its completion at t1.
func (r *run) op(t0, t1 float64, p history.Process, typ history.Type, f, key string, in, out *history.Value) {
	r.ev(t0, p, history.Invoke, f, key, in)
	r.ev(t1, p, typ, f, key, out)
}

func (r *run) instant(t float64, p history.Process, f, key string, v *history.Value) {
	r.ev(t, p, history.Invoke, f, key, v)
	r.ev(t, p, history.OK, f, key, v)
}

func (r *run) acquire(t0, t1 float64, p history.Process, key string, tok int64, session string) {
	r.op(t0, t1, p, history.OK, history.FAcquire, key, nil, &history.Value{Token: history.Int64(tok), Session: session})
}

// entry appends an apply-log line committed at t.
func (r *run) entry(t float64, op, key string, p int, tok, n int64) {
	prev, ok := r.last[key]
	if !ok {
		prev = register.Entry{Value: 0, Token: register.NoToken}
	}
	e := register.Entry{Seq: int64(len(r.log) + 1), Wall: wall0 + ms(t), Op: op, Key: key, Token: tok, HasToken: true,
		Value: n, Process: p, Accepted: true, PrevValue: prev.Value, PrevToken: prev.Token, Mode: register.ModeOff}
	r.log = append(r.log, e)
	if op == register.OpWrite {
		if r.last == nil {
			r.last = map[string]register.Entry{}
		}
		r.last[key] = e
	}
}

// critical records a whole critical section of p under token tok: read n,
// write n+1, release.
func (r *run) critical(t float64, p history.Process, key string, tok, n int64) {
	r.acquire(t, t+10, p, key, tok, "")
	r.op(t+11, t+12, p, history.OK, history.FRead, key, nil, &history.Value{N: history.Int64(n), Token: history.Int64(tok)})
	r.entry(t+11.5, register.OpRead, key, int(p), tok, n)
	r.op(t+13, t+15, p, history.OK, history.FWrite, key, &history.Value{N: history.Int64(n + 1)}, &history.Value{N: history.Int64(n + 1), Token: history.Int64(tok)})
	r.entry(t+14, register.OpWrite, key, int(p), tok, n+1)
	r.op(t+16, t+17, p, history.OK, history.FRelease, key, nil, &history.Value{Token: history.Int64(tok)})
}

func nemesis(target *history.Value, pid int, proc int, session string) *history.Value {
	v := *target
	v.PID, v.TargetProcess, v.Session = pid, history.Int(proc), session
	return &v
}

func (r *run) results(t *testing.T, cs ...checker.Checker) checker.Results {
	t.Helper()
	return checker.Run(context.Background(), checker.Input{History: r.h, ApplyLog: r.log, StartWall: wall0}, nil, cs)
}

func texts(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Text
	}
	return out
}

func wantSteps(t *testing.T, s Story, want []string) {
	t.Helper()
	got := texts(s.Steps)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("story %s %d (%s):\ngot:\n  %s\nwant:\n  %s", s.Checker, s.Index, s.Title, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func find(t *testing.T, told Told, checkerName string, i int) Story {
	t.Helper()
	for _, s := range told.Stories {
		if s.Checker == checkerName && s.Index == i {
			return s
		}
	}
	t.Fatalf("no story %s %d among %d", checkerName, i, len(told.Stories))
	return Story{}
}

var doubleWriter = checker.Checker{Name: fence.NameDoubleWriter, Check: fence.CheckDoubleWriter}

// pauseHolderRun: p2 acquires SKU-3 (token 17), reads 0 and begins its
// write; the nemesis pauses it; its session is seen gone; p5, p1 and p3
// take the lock in turn and write 1, 2, 3; p2 is resumed and its write of
// 1 lands: 3 increments lost.
func pauseHolderRun() *run {
	r := &run{}
	r.acquire(5600, 5700, 2, "SKU-3", 17, "0x2a")
	r.op(5710, 5720, 2, history.OK, history.FRead, "SKU-3", nil, &history.Value{N: history.Int64(0), Token: history.Int64(17)})
	r.entry(5715, register.OpRead, "SKU-3", 2, 17, 0)
	r.ev(5730, 2, history.Invoke, history.FWrite, "SKU-3", &history.Value{N: history.Int64(1)})
	target := &history.Value{Target: "process 2 (pid 4242) holding SKU-3 with token 17"}
	r.ev(5770, history.Nemesis, history.Invoke, history.FPause, "", &history.Value{Target: "pause-holder"})
	r.ev(5775, history.Nemesis, history.OK, history.FPause, "", nemesis(target, 4242, 2, ""))
	r.ev(7730, 2, history.Info, history.FWrite, "SKU-3", nil)
	r.instant(8800, history.Nemesis, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(2), PID: 4242, Session: "0x2a", LastSeenNS: history.Int64(ms(8600))})
	r.critical(8890, 5, "SKU-3", 19, 0)
	r.critical(9500, 1, "SKU-3", 21, 1)
	r.critical(10000, 3, "SKU-3", 23, 2)
	r.ev(11770, history.Nemesis, history.Invoke, history.FResume, "", nemesis(target, 4242, 2, ""))
	r.ev(11776, history.Nemesis, history.OK, history.FResume, "", nemesis(target, 4242, 2, ""))
	r.entry(11800, register.OpWrite, "SKU-3", 2, 17, 1)
	r.instant(11806, 2, history.FLate, "SKU-3", &history.Value{Of: history.FWrite, N: history.Int64(1), Token: history.Int64(17), State: "ok"})
	r.instant(11810, 2, history.FSession, "", &history.Value{Session: "0x2a", State: "expired"})
	return r
}

func TestPauseHolderDoubleWrite(t *testing.T) {
	r := pauseHolderRun()
	res := r.results(t, doubleWriter)
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	// The checker's order: the lost update (seq 15), then the token
	// regression at the same write.
	prefix := []string{
		"p2 acquired SKU-3 with token 17 at 5.70 s.",
		"p2 read n=0 from SKU-3 with token 17 at 5.71 s: accepted.",
		"p2 began its write of n=1 to SKU-3 at 5.73 s; the history recorded it as unknown (info) at 7.73 s: it had not answered in time.",
		"The nemesis paused p2 (pid 4242) at 5.77 s.",
		"The nemesis saw the session 0x2a of p2 gone from every server at 8.80 s (last seen alive at 8.60 s).",
		"p3 acquired SKU-3 with token 23 at 10.01 s.",
		"p3 wrote n=3 to SKU-3 with token 23 at 10.01 s: accepted.",
		"The nemesis resumed p2 (pid 4242) at 11.77 s (done at 11.78 s).",
		"Between p2's read (seq 1) and its write (seq 8) the register accepted 3 writes to SKU-3 by p5, p1, p3 (seqs 3–7), the last n=3.",
		"p2 wrote n=1 to SKU-3 with token 17 at 11.80 s: accepted.",
	}
	suffix := []string{
		"p2's late reply to that write arrived at 11.81 s: ok.",
		"p2 reported its session 0x2a expired at 11.81 s, after its write.",
	}
	lost := find(t, told, fence.NameDoubleWriter, 0)
	if lost.Title != "lost-update on SKU-3: p2 with token 17 against p3 with token 23" {
		t.Errorf("title = %q", lost.Title)
	}
	wantSteps(t, lost, concat(prefix,
		[]string{"The register's counter for SKU-3 went from 3 to 1 although every write adds one (expected 4, actual 1): 3 increments lost."}, suffix))
	wantSteps(t, find(t, told, fence.NameDoubleWriter, 1), concat(prefix,
		[]string{"The register accepted token 17 from p2 after it had accepted the higher token 23 from p3 (seq 7): a stale holder's write got through."}, suffix))
	if got := marked(lost); got != "p2 wrote n=1 to SKU-3 with token 17 at 11.80 s: accepted." {
		t.Errorf("marked step = %q", got)
	}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func marked(s Story) string {
	var out []string
	for _, st := range s.Steps {
		if st.Mark {
			out = append(out, st.Text)
		}
	}
	return strings.Join(out, " | ")
}

// The lost update told from the newer holder's side: after p2's stale
// write of 1, p4 writes 4 (it built on 3): the violation is p4's write,
// the stale grant is still p2's (the lower token).
func TestLostUpdateAfterStaleWrite(t *testing.T) {
	r := pauseHolderRun()
	r.acquire(11700, 11750, 4, "SKU-3", 25, "")
	r.entry(11900, register.OpWrite, "SKU-3", 4, 25, 4)
	res := r.results(t, doubleWriter)
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	s := find(t, told, fence.NameDoubleWriter, 2)
	if s.Title != "lost-update on SKU-3: p2 with token 17 against p4 with token 25" {
		t.Errorf("title = %q", s.Title)
	}
	wantSteps(t, s, []string{
		"p2 acquired SKU-3 with token 17 at 5.70 s.",
		"p2 read n=0 from SKU-3 with token 17 at 5.71 s: accepted.",
		"p2 began its write of n=1 to SKU-3 at 5.73 s; the history recorded it as unknown (info) at 7.73 s: it had not answered in time.",
		"The nemesis paused p2 (pid 4242) at 5.77 s.",
		"The nemesis saw the session 0x2a of p2 gone from every server at 8.80 s (last seen alive at 8.60 s).",
		"p4 acquired SKU-3 with token 25 at 11.75 s.",
		"The nemesis resumed p2 (pid 4242) at 11.77 s (done at 11.78 s).",
		"Between p2's read (seq 1) and its write (seq 8) the register accepted 3 writes to SKU-3 by p5, p1, p3 (seqs 3–7), the last n=3.",
		"p2 wrote n=1 to SKU-3 with token 17 at 11.80 s: accepted.",
		"p2's late reply to that write arrived at 11.81 s: ok.",
		"p2 reported its session 0x2a expired at 11.81 s, after its write.",
		"p4 wrote n=4 to SKU-3 with token 25 at 11.90 s: accepted.",
		"The register's counter for SKU-3 went from 1 to 4 (expected 2, actual 4): the write did not add one to the value the register held.",
	})
	if got := marked(s); got != "p4 wrote n=4 to SKU-3 with token 25 at 11.90 s: accepted." {
		t.Errorf("marked step = %q", got)
	}
}

// expireHolderRun: the nemesis closes p2's session while p2 is in its
// critical section; p2 learns at once, yet its write (already begun) lands
// after p5's.
func TestExpireHolderDoubleWrite(t *testing.T) {
	r := &run{}
	r.acquire(5600, 5700, 2, "SKU-1", 17, "0x2a")
	r.op(5710, 5720, 2, history.OK, history.FRead, "SKU-1", nil, &history.Value{N: history.Int64(0), Token: history.Int64(17)})
	r.entry(5715, register.OpRead, "SKU-1", 2, 17, 0)
	r.ev(5730, 2, history.Invoke, history.FWrite, "SKU-1", &history.Value{N: history.Int64(1)})
	target := &history.Value{Target: "process 2 (pid 4242) holding SKU-1 with token 17, session 0x2a"}
	r.ev(5770, history.Nemesis, history.Invoke, history.FExpire, "", &history.Value{Target: "expire-holder"})
	r.instant(5790, 2, history.FSession, "", &history.Value{Session: "0x2a", State: "expired"})
	r.instant(5791, 2, history.FLost, "SKU-1", &history.Value{Session: "0x2a", State: "expired", Token: history.Int64(17)})
	r.ev(5800, history.Nemesis, history.OK, history.FExpire, "", nemesis(target, 4242, 2, "0x2a"))
	r.instant(5840, history.Nemesis, history.FSessionGone, "", &history.Value{TargetProcess: history.Int(2), PID: 4242, Session: "0x2a", LastSeenNS: history.Int64(ms(5780))})
	r.critical(5850, 5, "SKU-1", 19, 0)
	r.entry(5900, register.OpWrite, "SKU-1", 2, 17, 1)
	r.ev(5905, 2, history.OK, history.FWrite, "SKU-1", &history.Value{N: history.Int64(1), Token: history.Int64(17)})
	r.ev(6500, history.Nemesis, history.Invoke, history.FExpireEnd, "", nemesis(target, 4242, 2, "0x2a"))
	r.ev(6600, history.Nemesis, history.OK, history.FExpireEnd, "", nemesis(target, 4242, 2, "0x2a"))
	res := r.results(t, doubleWriter)
	told := Tell(Input{History: r.h, ApplyLog: r.log, StartWall: wall0, Results: res})
	wantSteps(t, find(t, told, fence.NameDoubleWriter, 1), []string{
		"p2 acquired SKU-1 with token 17 at 5.70 s.",
		"p2 read n=0 from SKU-1 with token 17 at 5.71 s: accepted.",
		"p2 began its write of n=1 to SKU-1 at 5.73 s.",
		"The nemesis closed the session of p2 (pid 4242) from outside at 5.77 s.",
		"p2 reported its session 0x2a expired at 5.79 s.",
		"p2 reported SKU-1 lost (expired) at 5.79 s.",
		"The nemesis saw the session 0x2a of p2 gone from every server at 5.84 s (last seen alive at 5.78 s).",
		"p5 acquired SKU-1 with token 19 at 5.86 s.",
		"p5 wrote n=1 to SKU-1 with token 19 at 5.86 s: accepted.",
		"Between p2's read (seq 1) and its write (seq 4) the register accepted 1 write to SKU-1 by p5 (seq 3), the last n=1.",
		"p2 wrote n=1 to SKU-1 with token 17 at 5.90 s: accepted.",
		"The register accepted token 17 from p2 after it had accepted the higher token 19 from p5 (seq 3): a stale holder's write got through.",
		"The nemesis' expire fault on p2 (pid 4242) ended at 6.50 s (done at 6.60 s).",
	})
}

// No nemesis record at all, and no run start (writes placed by the
// workers' ok in the history): the story says what is missing.
func TestMissingFaultRecord(t *testing.T) {
	r := &run{}
	r.acquire(900, 1000, 2, "SKU-2", 17, "")
	r.op(1010, 1020, 2, history.OK, history.FRead, "SKU-2", nil, &history.Value{N: history.Int64(0), Token: history.Int64(17)})
	r.entry(1015, register.OpRead, "SKU-2", 2, 17, 0)
	r.ev(1030, 2, history.Invoke, history.FWrite, "SKU-2", &history.Value{N: history.Int64(1)})
	r.critical(1500, 5, "SKU-2", 19, 0)
	r.entry(1990, register.OpWrite, "SKU-2", 2, 17, 1)
	r.ev(2000, 2, history.OK, history.FWrite, "SKU-2", &history.Value{N: history.Int64(1), Token: history.Int64(17)})
	res := r.results(t, doubleWriter)
	told := Tell(Input{History: r.h, ApplyLog: r.log, Results: res})
	wantSteps(t, find(t, told, fence.NameDoubleWriter, 1), []string{
		"p2 acquired SKU-2 with token 17 at 1.00 s.",
		"No fault targeting p2 is recorded between its acquire at 1.00 s and its write at 2.00 s.",
		"No session event of p2 and no observation of its session's end by the nemesis is recorded between its acquire at 1.00 s and its write at 2.00 s.",
		"p2 read n=0 from SKU-2 with token 17 at 1.02 s: accepted.",
		"p2 began its write of n=1 to SKU-2 at 1.03 s.",
		"p5 acquired SKU-2 with token 19 at 1.51 s.",
		"p5 wrote n=1 to SKU-2 with token 19 at 1.51 s: accepted.",
		"Between p2's read (seq 1) and its write (seq 4) the register accepted 1 write to SKU-2 by p5 (seq 3), the last n=1.",
		"p2 wrote n=1 to SKU-2 with token 17 at 2.00 s: accepted.",
		"The register accepted token 17 from p2 after it had accepted the higher token 19 from p5 (seq 3): a stale holder's write got through.",
	})
}
