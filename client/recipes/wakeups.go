package recipes

import (
	"context"
	"sync/atomic"
)

// WakeupCounter is implemented by recipes that count watch wake-ups, so
// the herd checker can compare wake-ups per acquire with the waiters: a
// recipe that watches its predecessor wakes about once per acquire that
// waited, one that watches the head wakes every waiter at every release.
//
// A wake-up (docs/worker-protocol.md, "Wake-ups") is one watch
// notification that, during an Acquire call, woke that call's wait and
// made the lock code examine the queue again. Watches left by earlier,
// finished acquires that fire later are not counted, nor are session
// events. The count is per call rather than a running total because a
// running total charges an acquire with every watch that ever fired in the
// process, and then a recipe that abandons many acquires looks like a herd.
type WakeupCounter interface {
	// CountsWakeups is true when Acquire counts its wake-ups into the
	// counter of WithWakeups; the worker then reports the count with every
	// acquire answer, and leaves the optional field out otherwise.
	CountsWakeups() bool
}

type wakeupsKey struct{}

// WithWakeups returns a context under which an Acquire of a WakeupCounter
// recipe adds each of its wake-ups to n. A context carries the counter
// because it is the one thing that lives exactly as long as the call:
// whatever a recipe leaves running after the call returned no longer has
// a way to count into it.
func WithWakeups(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, wakeupsKey{}, n)
}

// wakeupsOf is the counter of the acquire running under ctx, nil if none.
func wakeupsOf(ctx context.Context) *atomic.Int64 {
	n, _ := ctx.Value(wakeupsKey{}).(*atomic.Int64)
	return n
}

// countWakeup counts one wake-up of the acquire running under ctx.
func countWakeup(ctx context.Context) {
	if n := wakeupsOf(ctx); n != nil {
		n.Add(1)
	}
}
