package lock

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/internal/checktest"
	"github.com/zkchaos/zkchaos/history"
)

func checkLock(t *testing.T, c func(context.Context, checker.Input) checker.Result, b *checktest.Timeline) checker.Result {
	t.Helper()
	return c(context.Background(), checker.Input{History: b.Events})
}

func TestLivenessHealthy(t *testing.T) {
	b := &checktest.Timeline{}
	for i := int64(0); i < 20; i++ {
		b.Section(i*10, int(i%3), "K", i+1)
	}
	if r := checkLock(t, CheckLiveness, b); r.Valid != checker.Valid {
		t.Fatalf("healthy history: %v %+v", r.Valid, r.Details)
	}
}

func TestLivenessFreeWithWaiters(t *testing.T) {
	b := &checktest.Timeline{}
	b.Section(0, 0, "K", 1)
	// Process 1 waits from 10 ms until its timeout at 5010 ms, the lock free.
	b.Op(10, 5010, 1, history.Fail, history.FAcquire, "K", nil, "timeout")
	r := checkLock(t, CheckLiveness, b)
	var d LivenessDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if r.Valid != checker.Invalid || len(d.Stalls) == 0 || d.Stalls[0].Kind != StallFreeWithWaiters || d.Stalls[0].Processes[0] != 1 {
		t.Fatalf("want a free-with-waiters stall naming process 1: %v %+v", r.Valid, d)
	}
	if !strings.Contains(r.Error, "stall") || !strings.Contains(r.Error, d.Stalls[0].Message) {
		t.Errorf("error = %q, want the stall's message", r.Error)
	}
}

// TestLivenessSoFar: a run still going whose waiter has waited past the
// threshold with the lock free shows the stall (its acquire still open);
// while a fault is in effect, or within its grace, the time is not
// judged yet, since the fault may still excuse it.
func TestLivenessSoFar(t *testing.T) {
	b := &checktest.Timeline{}
	b.Section(0, 0, "K", 1)
	b.Add(10, 1, history.Invoke, history.FAcquire, "K", nil, "")
	b.Section(3000, 2, "L", 1) // the run goes on elsewhere
	in := checker.Input{History: b.Events}
	if r := CheckLivenessSoFar(context.Background(), in); r.Valid != checker.Invalid {
		t.Fatalf("a waiter stuck 3 s on a free lock, so far: %v %s", r.Valid, r.Error)
	}
	early := checker.Input{History: b.Events[:5]} // to the waiter's invocation
	if r := CheckLivenessSoFar(context.Background(), early); r.Valid == checker.Invalid {
		t.Fatalf("a waiter that has just come: %v %s", r.Valid, r.Error)
	}
	f := &checktest.Timeline{Events: append([]history.Event(nil), b.Events[:5]...)}
	f.Add(20, -1, history.Invoke, history.FPause, "", &history.Value{Target: "pause-zk-leader"}, "")
	f.Add(21, -1, history.OK, history.FPause, "", &history.Value{Target: "server 1"}, "")
	f.Section(3000, 2, "L", 1)
	if r := CheckLivenessSoFar(context.Background(), checker.Input{History: f.Events}); r.Valid != checker.Unknown {
		t.Fatalf("during a fault: %v %s, want unknown", r.Valid, r.Error)
	}
	f.Add(3002, -1, history.Invoke, history.FResume, "", nil, "")
	f.Add(3003, -1, history.OK, history.FResume, "", nil, "")
	f.Section(4000, 2, "L", 2)
	if r := CheckLivenessSoFar(context.Background(), checker.Input{History: f.Events}); r.Valid != checker.Unknown {
		t.Fatalf("within the fault's grace: %v %s, want unknown", r.Valid, r.Error)
	}
	f.Section(8100, 2, "L", 3)
	f.Section(11000, 2, "L", 4)
	if r := CheckLivenessSoFar(context.Background(), checker.Input{History: f.Events}); r.Valid != checker.Invalid {
		t.Fatalf("the waiter stuck 2.9 s after the fault's grace: %v %s, want invalid", r.Valid, r.Error)
	}
}

func TestLivenessWaitingBehindPausedHolder(t *testing.T) {
	b := &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	// The holder is paused; its read is closed as info; process 1 waits
	// 4 s until ZooKeeper expires the holder and grants the lock.
	b.Add(2, -1, history.Invoke, history.FPause, "", &history.Value{Target: "pause-holder"}, "")
	b.Add(3, -1, history.OK, history.FPause, "", &history.Value{Target: "process 0 (pid 9) holding K"}, "")
	b.Op(5, 2005, 0, history.Info, history.FRead, "K", nil, "timeout")
	b.Op(10, 4000, 1, history.OK, history.FAcquire, "K", checktest.TokV(2), "")
	b.Add(6000, -1, history.Invoke, history.FResume, "", nil, "")
	b.Add(6001, -1, history.OK, history.FResume, "", nil, "")
	b.Op(4001, 4002, 1, history.OK, history.FRelease, "K", checktest.TokV(2), "")
	if r := checkLock(t, CheckLiveness, b); r.Valid != checker.Valid {
		t.Fatalf("waiting behind a paused holder flagged: %+v", r.Details)
	}
}

func TestTokenOrder(t *testing.T) {
	b := &checktest.Timeline{}
	b.Section(0, 0, "K", 5).Section(10, 1, "K", 7).Section(20, 0, "L", 1)
	if r := checkLock(t, CheckTokenOrder, b); r.Valid != checker.Valid {
		t.Fatalf("increasing tokens flagged: %+v", r.Details)
	}
	b.Section(30, 2, "K", 7) // a tie is a regression: the fence cannot tell them apart
	if r := checkLock(t, CheckTokenOrder, b); r.Valid != checker.Invalid {
		t.Fatalf("tied tokens not flagged")
	}
}

func TestGrantOverlap(t *testing.T) {
	b := &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	b.Op(5, 6, 1, history.OK, history.FAcquire, "K", checktest.TokV(2), "") // granted while 0 holds
	b.Op(10, 11, 0, history.OK, history.FRelease, "K", checktest.TokV(1), "")
	if r := checkLock(t, CheckGrantOverlap, b); r.Valid != checker.Invalid {
		t.Fatalf("overlap not flagged: %+v", r.Details)
	}
	// The same, but the first holder's release says revoked: an expiry,
	// which the lock is allowed.
	b = &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	b.Op(5, 6, 1, history.OK, history.FAcquire, "K", checktest.TokV(2), "")
	b.Op(10, 11, 0, history.Fail, history.FRelease, "K", checktest.TokV(1), "revoked")
	if r := checkLock(t, CheckGrantOverlap, b); r.Valid != checker.Valid {
		t.Fatalf("revoked release flagged: %+v", r.Details)
	}
}

// queue simulates n workers taking turns on K, each acquiring again as
// soon as it released, in rounds: every acquire waits for the n-1 holders
// ahead of it. wakes is what each acquire reports; with timeouts, every
// third acquire times out instead of being granted.
func queue(n, rounds int, timeouts bool, wakes func(i int) int64) *checktest.Timeline {
	b := &checktest.Timeline{}
	type pend struct {
		p  int
		at int64
	}
	var q []pend
	for p := 0; p < n; p++ {
		q = append(q, pend{p, int64(p)})
	}
	t, tok := int64(100), int64(0)
	for i := 0; i < n*rounds; i++ {
		w := q[0]
		q = q[1:]
		t += 10
		v := &history.Value{Wakeups: history.Int64(wakes(i))}
		if timeouts && i%3 == 2 {
			b.Op(w.at, t, w.p, history.Fail, history.FAcquire, "K", v, "timeout")
		} else {
			tok++
			v.Token = history.Int64(tok)
			b.Op(w.at, t, w.p, history.OK, history.FAcquire, "K", v, "")
			b.Op(t+1, t+2, w.p, history.OK, history.FRelease, "K", checktest.TokV(tok), "")
		}
		q = append(q, pend{w.p, t + 3})
	}
	sortByTime(b)
	for i := range b.Events {
		b.Events[i].Index = int64(i)
	}
	return b
}

func herdDetails(t *testing.T, r checker.Result) HerdDetails {
	t.Helper()
	var d HerdDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestHerd: a predecessor watch wakes each acquire about once, with or
// without timeouts, whatever the queue; a herd wakes each acquire once per
// holder ahead of it, which grows with the queue and is caught.
func TestHerd(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		for _, timeouts := range []bool{false, true} {
			r := checkLock(t, CheckHerd, queue(n, 20, timeouts, func(int) int64 { return 1 }))
			if d := herdDetails(t, r); r.Valid != checker.Valid || d.WakeupsPerAcquire > 1 {
				t.Errorf("predecessor watch, %d workers, timeouts %v: %v %s %+v", n, timeouts, r.Valid, r.Error, d)
			}
		}
	}
	for _, n := range []int{4, 6, 8} {
		r := checkLock(t, CheckHerd, queue(n, 20, false, func(int) int64 { return int64(n - 1) }))
		d := herdDetails(t, r)
		if r.Valid != checker.Invalid || d.WakeupsPerAcquire < float64(n-1)-0.01 || d.MeanWaiters < float64(n-1)-0.5 {
			t.Errorf("herd, %d workers: %v %+v", n, r.Valid, d)
		}
	}
	// More wake-ups than a predecessor watch can cause, but far fewer
	// than the waiters: not a herd (it would wake about all 7).
	r := checkLock(t, CheckHerd, queue(8, 20, false, func(i int) int64 { return int64(2 + i%2) }))
	if d := herdDetails(t, r); r.Valid != checker.Valid || d.WakeupsPerAcquire != 2.5 {
		t.Errorf("2.5 wake-ups per acquire with 7 waiters: %v %+v", r.Valid, d)
	}
	if r := checkLock(t, CheckHerd, (&checktest.Timeline{}).Section(0, 0, "K", 1)); r.Valid != checker.Unknown {
		t.Fatalf("no wake-up counts: want unknown")
	}
}

// TestHerdCounts: fails and late answers of acquires report their
// wake-ups too; info answers carry none.
func TestHerdCounts(t *testing.T) {
	b := queue(3, 10, true, func(i int) int64 { return int64(i % 2) })
	b.Op(1000, 2000, 7, history.Info, history.FAcquire, "K", nil, "timeout")
	late := &history.Value{Of: history.FAcquire, State: string(history.OK), Token: history.Int64(99), Wakeups: history.Int64(1)}
	b.Add(2100, 7, history.Invoke, history.FLate, "K", late, "")
	b.Add(2100, 7, history.OK, history.FLate, "K", late, "")
	r := checkLock(t, CheckHerd, b)
	d := herdDetails(t, r)
	if r.Valid != checker.Valid || d.Acquires != 31 || d.Wakeups != 16 || d.Keys["K"].Acquires != 31 {
		t.Fatalf("%v %s %+v", r.Valid, r.Error, d)
	}
}

// TestLivenessIsolatedHolder: the holder is cut off for 20 s and waiters
// time out meanwhile, which is not a liveness failure. The fault window
// runs from isolate to heal (paired by their verbs), whatever the nemesis
// records in between (here the observation that the holder's session is
// gone), and its target is the target_process field.
func TestLivenessIsolatedHolder(t *testing.T) {
	b := &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	b.Add(2, -1, history.Invoke, history.FIsolate, "", &history.Value{Target: "isolate-holder"}, "")
	b.Add(3, -1, history.OK, history.FIsolate, "", &history.Value{Target: "holder of K", PID: 9, TargetProcess: history.Int(0)}, "")
	b.Op(5, 2005, 0, history.Info, history.FRead, "K", nil, "timeout")
	gone := &history.Value{TargetProcess: history.Int(0), Session: "0x1", LastSeenNS: history.Int64(1000)}
	b.Add(2500, -1, history.Invoke, history.FSessionGone, "", gone, "")
	b.Add(2500, -1, history.OK, history.FSessionGone, "", gone, "")
	for t0 := int64(10); t0 < 19000; t0 += 1010 {
		b.Op(t0, t0+1000, 1, history.Fail, history.FAcquire, "K", nil, "timeout")
	}
	b.Add(20000, -1, history.Invoke, history.FHeal, "", &history.Value{PID: 9}, "")
	b.Add(20001, -1, history.OK, history.FHeal, "", &history.Value{PID: 9}, "")
	b.Op(20100, 20200, 1, history.OK, history.FAcquire, "K", checktest.TokV(2), "")
	b.Op(20300, 20301, 1, history.OK, history.FRelease, "K", checktest.TokV(2), "")
	if r := checkLock(t, CheckLiveness, b); r.Valid != checker.Valid {
		t.Fatalf("waiting behind an isolated holder flagged: %s %+v", r.Error, r.Details)
	}
}

// overlapCase: process 0 holds K from 1 ms, process 1 is granted K at
// 6 ms, process 0 releases ok at 10 ms; extra adds the holder's (or the
// nemesis') events.
func overlapCase(extra func(b *checktest.Timeline)) *checktest.Timeline {
	b := &checktest.Timeline{}
	b.Add(0, 0, history.Invoke, history.FSession, "", nil, "")
	b.Op(0, 1, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	extra(b)
	b.Op(5, 6, 1, history.OK, history.FAcquire, "K", checktest.TokV(2), "")
	b.Op(10, 11, 0, history.OK, history.FRelease, "K", checktest.TokV(1), "")
	b.Events = b.Events[1:] // the placeholder only kept the indexes apart
	sortByTime(b)
	return b
}

func sortByTime(b *checktest.Timeline) {
	slices.SortStableFunc(b.Events, func(x, y history.Event) int { return cmp.Compare(x.Time, y.Time) })
}

func instant(b *checktest.Timeline, ms int64, p int, f, key string, v *history.Value) {
	b.Add(ms, p, history.Invoke, f, key, v, "")
	b.Add(ms, p, history.OK, f, key, v, "")
}

func gone(lastSeenMS int64, session string) *history.Value {
	return &history.Value{TargetProcess: history.Int(0), Session: session, LastSeenNS: history.Int64(lastSeenMS * int64(time.Millisecond))}
}

// TestGrantOverlapExcuses: only a loss of the holder's session before the
// intruder's grant excuses an overlap.
func TestGrantOverlapExcuses(t *testing.T) {
	cases := []struct {
		name  string
		extra func(b *checktest.Timeline)
		valid bool
	}{
		{"no loss", func(*checktest.Timeline) {}, false},
		{"lost on its own release, any other reason", func(b *checktest.Timeline) {
			instant(b, 9, 0, history.FLost, "K", &history.Value{State: "released"})
		}, false},
		{"lost expired, but after the intruder's grant", func(b *checktest.Timeline) {
			instant(b, 8, 0, history.FLost, "K", &history.Value{State: "expired"})
		}, false},
		{"lost expired before the grant", func(b *checktest.Timeline) {
			instant(b, 4, 0, history.FLost, "K", &history.Value{State: "expired"})
		}, true},
		{"lost session-changed before the grant", func(b *checktest.Timeline) {
			instant(b, 4, 0, history.FLost, "K", &history.Value{State: "session-changed"})
		}, true},
		{"lost expired for another key", func(b *checktest.Timeline) {
			instant(b, 4, 0, history.FLost, "J", &history.Value{State: "expired"})
		}, false},
		{"session expired before the grant", func(b *checktest.Timeline) {
			instant(b, 4, 0, history.FSession, "", &history.Value{State: "expired", Session: "0xa"})
		}, true},
		{"an earlier session expired, not the grant's", func(b *checktest.Timeline) {
			instant(b, 0, 0, history.FSession, "", &history.Value{State: "connected", Session: "0xb"})
			instant(b, 4, 0, history.FSession, "", &history.Value{State: "expired", Session: "0xa"})
		}, false},
		{"session seen gone (after the release), last seen before the grant", func(b *checktest.Timeline) {
			instant(b, 12, -1, history.FSessionGone, "", gone(5, "0xa"))
		}, true},
		{"session seen gone, last seen after the grant", func(b *checktest.Timeline) {
			instant(b, 12, -1, history.FSessionGone, "", gone(7, "0xa"))
		}, false},
		{"another process's session seen gone", func(b *checktest.Timeline) {
			v := gone(5, "0xa")
			v.TargetProcess = history.Int(3)
			instant(b, 12, -1, history.FSessionGone, "", v)
		}, false},
	}
	for _, c := range cases {
		r := checkLock(t, CheckGrantOverlap, overlapCase(c.extra))
		var d GrantOverlapDetails
		if err := r.DecodeDetails(&d); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.valid && (r.Valid != checker.Valid || len(d.Excused) != 1):
			t.Errorf("%s: want excused: %v %s %+v", c.name, r.Valid, r.Error, d)
		case !c.valid && (r.Valid != checker.Invalid || d.OverlapCount != 1):
			t.Errorf("%s: want an overlap: %v %+v", c.name, r.Valid, d)
		}
	}
}

// TestGrantOverlapFalseRelease: a release answered ok after the nemesis
// saw the holder's session gone is a false claim, with or without an
// intruder; an observation of a session the holder had already left (it
// reported it expired and connected anew before the grant) is not.
func TestGrantOverlapFalseRelease(t *testing.T) {
	b := &checktest.Timeline{}
	b.Op(0, 1, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	instant(b, 5, -1, history.FSessionGone, "", gone(3, "0xa"))
	b.Op(10, 11, 0, history.OK, history.FRelease, "K", checktest.TokV(1), "")
	r := checkLock(t, CheckGrantOverlap, b)
	var d GrantOverlapDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if r.Valid != checker.Invalid || d.FalseReleaseCount != 1 || d.OverlapCount != 0 {
		t.Fatalf("false release: %v %+v", r.Valid, d)
	}
	f := d.FalseReleases[0]
	if f.Holder != 0 || f.Session != "0xa" || f.GoneAtNS != 5*int64(time.Millisecond) || !strings.Contains(r.Error, "its node was gone") {
		t.Errorf("evidence %+v, error %q", f, r.Error)
	}

	b = &checktest.Timeline{}
	instant(b, 0, 0, history.FSession, "", &history.Value{State: "connected", Session: "0xa"})
	instant(b, 1, 0, history.FSession, "", &history.Value{State: "expired", Session: "0xa"})
	instant(b, 2, 0, history.FSession, "", &history.Value{State: "connected", Session: "0xb"})
	b.Op(3, 4, 0, history.OK, history.FAcquire, "K", checktest.TokV(1), "")
	instant(b, 5, -1, history.FSessionGone, "", gone(0, "0xa"))
	b.Op(10, 11, 0, history.OK, history.FRelease, "K", checktest.TokV(1), "")
	if r := checkLock(t, CheckGrantOverlap, b); r.Valid != checker.Valid {
		t.Fatalf("an old session's observation: %v %s", r.Valid, r.Error)
	}
}

// TestHerdRunningCounts: a worker that still reports a running count (the
// protocol before wake-ups were counted per acquire) is not called a herd
// on numbers that mean something else: its counts exceed what the queue
// could cause during an acquire, and the answer is unknown.
func TestHerdRunningCounts(t *testing.T) {
	total := map[int]int64{}
	b := queue(4, 20, true, func(i int) int64 { return 0 })
	for i, e := range b.Events {
		if e.F == history.FAcquire && e.Type != history.Invoke {
			total[int(e.Process)]++ // one wake-up per acquire, counted since the start
			v := *e.Value
			v.Wakeups = history.Int64(total[int(e.Process)])
			b.Events[i].Value = &v
		}
	}
	r := checkLock(t, CheckHerd, b)
	if d := herdDetails(t, r); r.Valid != checker.Unknown || d.Implausible < 40 || !strings.Contains(r.Error, "running count") {
		t.Fatalf("running counts: %v %s %+v", r.Valid, r.Error, d)
	}
}
