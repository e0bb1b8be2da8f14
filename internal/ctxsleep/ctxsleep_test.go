package ctxsleep

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), 5*time.Millisecond) {
		t.Error("a whole sleep reported cut short")
	}
	if !Sleep(context.Background(), 0) {
		t.Error("a zero sleep on a live context reported cut short")
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(done, 0) || Sleep(done, time.Hour) {
		t.Error("a sleep on an ended context reported whole")
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer stop()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Error("a sleep cut by its context reported whole")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cut short only after %s", took)
	}
}
