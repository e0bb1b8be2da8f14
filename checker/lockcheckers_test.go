package checker

import (
	"context"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
)

// lockHist builds histories for the lock checkers; times are in milliseconds.
type lockHist struct{ ev []history.Event }

func (b *lockHist) add(ms int64, p int, typ history.Type, f, key string, v *history.Value, err string) *lockHist {
	proc := history.Process(p)
	if p < 0 {
		proc = history.Nemesis
	}
	b.ev = append(b.ev, history.Event{Index: int64(len(b.ev)), Time: ms * int64(time.Millisecond), Process: proc,
		Type: typ, F: f, Key: key, Value: v, Error: err})
	return b
}

// op records an invocation at from and its completion at to.
func (b *lockHist) op(from, to int64, p int, typ history.Type, f, key string, v *history.Value, err string) *lockHist {
	b.add(from, p, history.Invoke, f, key, nil, "")
	return b.add(to, p, typ, f, key, v, err)
}

func tokv(t int64) *history.Value { return &history.Value{Token: history.Int64(t)} }

// section is a healthy critical section of p on key from t (ms).
func (b *lockHist) section(t int64, p int, key string, token int64) *lockHist {
	b.op(t, t+1, p, history.OK, history.FAcquire, key, tokv(token), "")
	return b.op(t+2, t+3, p, history.OK, history.FRelease, key, tokv(token), "")
}

func checkLock(t *testing.T, c func(context.Context, Input) Result, b *lockHist) Result {
	t.Helper()
	return c(context.Background(), Input{History: b.ev})
}

func TestLivenessHealthy(t *testing.T) {
	b := &lockHist{}
	for i := int64(0); i < 20; i++ {
		b.section(i*10, int(i%3), "K", i+1)
	}
	if r := checkLock(t, CheckLiveness, b); r.Valid != Valid {
		t.Fatalf("healthy history: %v %+v", r.Valid, r.Details)
	}
}

func TestLivenessFreeWithWaiters(t *testing.T) {
	b := &lockHist{}
	b.section(0, 0, "K", 1)
	// Process 1 waits from 10 ms until its timeout at 5010 ms, the lock free.
	b.op(10, 5010, 1, history.Fail, history.FAcquire, "K", nil, "timeout")
	r := checkLock(t, CheckLiveness, b)
	var d LivenessDetails
	if err := r.DecodeDetails(&d); err != nil {
		t.Fatal(err)
	}
	if r.Valid != Invalid || len(d.Stalls) == 0 || d.Stalls[0].Kind != StallFreeWithWaiters || d.Stalls[0].Processes[0] != 1 {
		t.Fatalf("want a free-with-waiters stall naming process 1: %v %+v", r.Valid, d)
	}
}

func TestLivenessWaitingBehindPausedHolder(t *testing.T) {
	b := &lockHist{}
	b.op(0, 1, 0, history.OK, history.FAcquire, "K", tokv(1), "")
	// The holder is paused; its read is closed as info; process 1 waits
	// 4 s until ZooKeeper expires the holder and grants the lock.
	b.add(2, -1, history.Invoke, history.FPause, "", &history.Value{Target: "pause-holder"}, "")
	b.add(3, -1, history.OK, history.FPause, "", &history.Value{Target: "process 0 (pid 9) holding K"}, "")
	b.op(5, 2005, 0, history.Info, history.FRead, "K", nil, "timeout")
	b.op(10, 4000, 1, history.OK, history.FAcquire, "K", tokv(2), "")
	b.add(6000, -1, history.Invoke, history.FResume, "", nil, "")
	b.add(6001, -1, history.OK, history.FResume, "", nil, "")
	b.op(4001, 4002, 1, history.OK, history.FRelease, "K", tokv(2), "")
	if r := checkLock(t, CheckLiveness, b); r.Valid != Valid {
		t.Fatalf("waiting behind a paused holder flagged: %+v", r.Details)
	}
}

func TestTokenOrder(t *testing.T) {
	b := &lockHist{}
	b.section(0, 0, "K", 5).section(10, 1, "K", 7).section(20, 0, "L", 1)
	if r := checkLock(t, CheckTokenOrder, b); r.Valid != Valid {
		t.Fatalf("increasing tokens flagged: %+v", r.Details)
	}
	b.section(30, 2, "K", 7) // a tie is a regression: the fence cannot tell them apart
	if r := checkLock(t, CheckTokenOrder, b); r.Valid != Invalid {
		t.Fatalf("tied tokens not flagged")
	}
}

func TestGrantOverlap(t *testing.T) {
	b := &lockHist{}
	b.op(0, 1, 0, history.OK, history.FAcquire, "K", tokv(1), "")
	b.op(5, 6, 1, history.OK, history.FAcquire, "K", tokv(2), "") // granted while 0 holds
	b.op(10, 11, 0, history.OK, history.FRelease, "K", tokv(1), "")
	if r := checkLock(t, CheckGrantOverlap, b); r.Valid != Invalid {
		t.Fatalf("overlap not flagged: %+v", r.Details)
	}
	// The same, but the first holder's release says revoked: an expiry,
	// which the lock is allowed.
	b = &lockHist{}
	b.op(0, 1, 0, history.OK, history.FAcquire, "K", tokv(1), "")
	b.op(5, 6, 1, history.OK, history.FAcquire, "K", tokv(2), "")
	b.op(10, 11, 0, history.Fail, history.FRelease, "K", tokv(1), "revoked")
	if r := checkLock(t, CheckGrantOverlap, b); r.Valid != Valid {
		t.Fatalf("revoked release flagged: %+v", r.Details)
	}
}

func TestHerd(t *testing.T) {
	build := func(wakesPerGrant int64) *lockHist {
		b := &lockHist{}
		// Three waiters queue behind each grant of K.
		for i := int64(0); i < 10; i++ {
			t0 := i * 100
			for w := 1; w <= 3; w++ {
				b.add(t0+int64(w), 10+w+int(i)*3, history.Invoke, history.FAcquire, "K", nil, "")
			}
			b.add(t0+50, 0, history.Invoke, history.FAcquire, "K", nil, "")
			b.add(t0+51, 0, history.OK, history.FAcquire, "K", &history.Value{Token: history.Int64(i + 1), Wakeups: history.Int64((i + 1) * wakesPerGrant)}, "")
			for w := 1; w <= 3; w++ {
				b.add(t0+90, 10+w+int(i)*3, history.Fail, history.FAcquire, "K", nil, "timeout")
			}
		}
		return b
	}
	if r := checkLock(t, CheckHerd, build(1)); r.Valid != Valid {
		t.Fatalf("one wake-up per hand-off flagged: %+v", r.Details)
	}
	if r := checkLock(t, CheckHerd, build(4)); r.Valid != Invalid {
		t.Fatalf("four wake-ups per hand-off with three waiters not flagged: %+v", r.Details)
	}
	if r := checkLock(t, CheckHerd, (&lockHist{}).section(0, 0, "K", 1)); r.Valid != Unknown {
		t.Fatalf("no wake-up counts: want unknown")
	}
}
