package nemesis

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// holders is a Targets of fixed holders.
type holders []Holder

func (h holders) Holders() []Holder { return h }

// TestWaitHolderPastItsCheck: a holder whose write was sent a moment ago
// has not checked its lock yet, so a pause then shows nothing; the holder
// taken is one in its critical section at least expireAfterCheck old,
// else any holder once the preference has timed out.
func TestWaitHolderPastItsCheck(t *testing.T) {
	now := time.Now()
	env := &Env{Rand: rand.New(rand.NewPCG(1, 2)), Targets: holders{
		{Process: 1, InCriticalSection: true, CriticalSince: now},
		{Process: 2, InCriticalSection: true, CriticalSince: now.Add(-50 * time.Millisecond)},
		{Process: 3},
	}}
	for range 20 {
		h, ok := waitHolder(context.Background(), env, time.Second)
		if !ok || h.Process != 2 {
			t.Fatalf("took %+v, want process 2 (past its check)", h)
		}
	}
	env.Targets = holders{{Process: 1, InCriticalSection: true, CriticalSince: time.Now()}}
	start := time.Now()
	if h, ok := waitHolder(context.Background(), env, time.Second); !ok || h.Process != 1 || time.Since(start) < expireAfterCheck-time.Millisecond {
		t.Errorf("took %+v after %s; want process 1 once its check is %s old", h, time.Since(start), expireAfterCheck)
	}
	env.Targets = holders{{Process: 3}}
	if h, ok := waitHolder(context.Background(), env, 20*time.Millisecond); !ok || h.Process != 3 {
		t.Errorf("took %+v; want any holder after the preference timed out", h)
	}
}
