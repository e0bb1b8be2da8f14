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

func TestHerd(t *testing.T) {
	build := func(wakesPerGrant int64) *checktest.Timeline {
		b := &checktest.Timeline{}
		// Three waiters queue behind each grant of K.
		for i := int64(0); i < 10; i++ {
			t0 := i * 100
			for w := 1; w <= 3; w++ {
				b.Add(t0+int64(w), 10+w+int(i)*3, history.Invoke, history.FAcquire, "K", nil, "")
			}
			b.Add(t0+50, 0, history.Invoke, history.FAcquire, "K", nil, "")
			b.Add(t0+51, 0, history.OK, history.FAcquire, "K", &history.Value{Token: history.Int64(i + 1), Wakeups: history.Int64((i + 1) * wakesPerGrant)}, "")
			for w := 1; w <= 3; w++ {
				b.Add(t0+90, 10+w+int(i)*3, history.Fail, history.FAcquire, "K", nil, "timeout")
			}
		}
		return b
	}
	if r := checkLock(t, CheckHerd, build(1)); r.Valid != checker.Valid {
		t.Fatalf("one wake-up per hand-off flagged: %+v", r.Details)
	}
	if r := checkLock(t, CheckHerd, build(4)); r.Valid != checker.Invalid {
		t.Fatalf("four wake-ups per hand-off with three waiters not flagged: %+v", r.Details)
	}
	if r := checkLock(t, CheckHerd, (&checktest.Timeline{}).Section(0, 0, "K", 1)); r.Valid != checker.Unknown {
		t.Fatalf("no wake-up counts: want unknown")
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
