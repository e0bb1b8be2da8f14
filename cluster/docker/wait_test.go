package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A look slower than the limit that sees the effect is a success: the
// limit bounds the effect, not the engine's answer.
func TestWaitUntilLetsASlowLookFinish(t *testing.T) {
	looks := 0
	err := waitUntil(context.Background(), 30*time.Millisecond, func(context.Context) (bool, error) {
		looks++
		time.Sleep(80 * time.Millisecond)
		return looks == 2, nil
	})
	if err != nil {
		t.Fatalf("waitUntil = %v after %d looks; the second look, begun after the limit, saw the effect", err, looks)
	}
}

// An effect that never shows fails once a look begun after the limit
// still misses it, and the error carries that look's.
func TestWaitUntilGivesUpAfterTheLimit(t *testing.T) {
	start := time.Now()
	var lateLooks int
	err := waitUntil(context.Background(), 50*time.Millisecond, func(context.Context) (bool, error) {
		if time.Since(start) > 50*time.Millisecond {
			lateLooks++
		}
		return false, errors.New("ps shows T")
	})
	if err == nil || !strings.Contains(err.Error(), "not seen within 50ms") || !strings.Contains(err.Error(), "ps shows T") {
		t.Fatalf("waitUntil = %v, want not seen within 50ms with the last look's error", err)
	}
	// One look begun after the limit ends the wait; a look begun just
	// before it may also have run past it.
	if lateLooks < 1 || lateLooks > 2 {
		t.Errorf("%d looks after the limit, want 1 or 2", lateLooks)
	}
}

func TestWaitUntilStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := waitUntil(ctx, time.Hour, func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("waitUntil = %v, want context.Canceled", err)
	}
}
