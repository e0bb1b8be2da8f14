package pgfence

import (
	"context"
	"sync"
	"testing"

	"github.com/zkchaos/zkchaos/resource/register"
)

// TestRetriedRequestAppliedOnce is fencing's blind spot, a retry under a
// valid token (docs/background.md#exactly-once-effects): the same request (same id,
// same legal token) arriving again is refused by the unique constraint and
// answered as the original, even after another write moved the row on; it
// is neither applied again (fencing on would accept it: its token is not
// below the fence) nor answered with a rejection (strict would refuse it).
func TestRetriedRequestAppliedOnce(t *testing.T) {
	for _, mode := range []string{register.ModeOn, register.ModeStrict, register.ModeOff} {
		t.Run(mode, func(t *testing.T) {
			s := testServer(t, mode)
			c := testClient(t, s)
			ctx := context.Background()
			first, err := c.Do(ctx, "req-1", register.OpWrite, "k", 1, tok(5), 1, 0)
			if err != nil || !first.Accepted {
				t.Fatalf("first attempt: %+v %v", first, err)
			}
			again, err := c.Do(ctx, "req-1", register.OpWrite, "k", 1, tok(5), 1, 0)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if again != first {
				t.Fatalf("retry answered %+v, the original was %+v", again, first)
			}
			if _, err := c.Do(ctx, "req-2", register.OpWrite, "k", 2, tok(6), 2, 0); err != nil {
				t.Fatal(err)
			}
			late, err := c.Do(ctx, "req-1", register.OpWrite, "k", 1, tok(5), 1, 0)
			if err != nil || late != first {
				t.Fatalf("retry after another write: %+v %v, want the original %+v", late, err, first)
			}
			if _, err := c.Do(ctx, "req-1", register.OpWrite, "k", 7, tok(5), 1, 0); err == nil {
				t.Fatal("a request id reused for another value was answered")
			}
			entries := export(t, s)
			if len(entries) != 2 {
				t.Fatalf("%d audit rows, want 2 (each request once): %+v", len(entries), entries)
			}
			if _, err := register.ReplayAll(entries); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestConcurrentWritersGapFree: writers on a few keys at once; the
// export holds every committed request once, each key's rows in counter
// order, and replays.
func TestConcurrentWritersGapFree(t *testing.T) {
	s := testServer(t, register.ModeOn)
	ctx := context.Background()
	const writers, each = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		c := testClient(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := []string{"a", "b"}[i%2]
				if _, err := c.Write(ctx, register.WriteRequest{Key: key, Value: int64(i), Token: tok(int64(w*1000 + i)), Process: w}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries := export(t, s)
	if len(entries) != writers*each {
		t.Fatalf("exported %d, want %d", len(entries), writers*each)
	}
	if _, err := register.ReplayAll(entries); err != nil {
		t.Fatalf("replay: %v", err)
	}
}
