package lock

import (
	"context"
	"strings"
	"testing"

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
