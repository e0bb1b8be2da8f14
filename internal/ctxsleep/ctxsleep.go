// Package ctxsleep is the one context-aware sleep of the harness: every
// wait between polls, a fault's hold, a worker's protected work, a
// client's think time ends as soon as its context does, so a run that
// must stop never waits out a timer.
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first. It reports whether the whole
// of d passed with ctx still live: false when ctx ended before or during
// the wait. A d of zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
