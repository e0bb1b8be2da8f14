package bench

import (
	"context"
	"testing"
	"time"
)

// TestWindowCountsEnough: a window whose length sees fewer than minOps
// operations (a slow subject, a loaded machine) stays open until it has
// counted them, and its rate is over the time it was open; one that
// never could is closed at maxStretch times its length.
func TestWindowCountsEnough(t *testing.T) {
	slow := func(ctx context.Context, _ int) error { time.Sleep(100 * time.Millisecond); return nil }
	f, err := window(context.Background(), 1, 0, 30*time.Millisecond, nil, slow)
	if err != nil {
		t.Fatal(err)
	}
	if f.Ops < minOps || f.Seconds < 0.09 || f.PerSec <= 0 || f.PerSec > 12 {
		t.Errorf("figure %+v: want at least %d op over the time the window was open (about 10/s)", f, minOps)
	}
	never := func(ctx context.Context, _ int) error { time.Sleep(time.Second); return nil }
	f, err = window(context.Background(), 1, 0, 20*time.Millisecond, nil, never)
	if err != nil {
		t.Fatal(err)
	}
	if f.Seconds < (maxStretch*20*time.Millisecond).Seconds() || f.Seconds > 0.9 || f.Ops > 0 {
		t.Errorf("figure %+v: want the window closed at %d times its length with nothing counted", f, maxStretch)
	}
}
