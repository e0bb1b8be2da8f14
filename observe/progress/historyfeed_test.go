package progress

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/checker/config"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestTrackerFollowHistory: the online checks of the history count a
// token regression and an overlap while the run lasts, from the events
// as they are recorded, and tell first the checker that found the run's
// first violation.
func TestTrackerFollowHistory(t *testing.T) {
	tr := started()
	rec := tr.Recorder(history.NewMemory())
	ev := func(p history.Process, typ history.Type, f string, tok int64) {
		t.Helper()
		var v *history.Value
		if tok > 0 {
			v = &history.Value{Token: history.Int64(tok)}
		}
		if _, err := rec.Append(history.Event{Process: p, Type: typ, F: f, Key: "K", Value: v}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // times grow: the streams judge once the clock passes
	}
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	firsts := make(chan string, 10)
	names := []string{lock.NameGrantOverlap, lock.NameTokenOrder, fence.NameWrongToken, lock.NameHerd}
	ev(0, history.Invoke, history.FAcquire, 0) // recorded before Follow starts: queued
	go func() {
		done <- tr.Follow(ctx, filepath.Join(t.TempDir(), "none.jsonl"), names, slog.New(slog.NewTextHandler(&logs, nil)),
			func(c string) { firsts <- c }, Fencing(register.ModeOn))
	}()
	count := func(name string) int {
		st, _ := tr.Status()
		for _, c := range st.Online {
			if c.Name == name {
				return c.Violations
			}
		}
		return -1
	}
	waitFor := func(name string, want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for count(name) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d violations, want %d", name, count(name), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	ev(0, history.OK, history.FAcquire, 5)
	ev(1, history.Invoke, history.FAcquire, 0)
	ev(1, history.OK, history.FAcquire, 3) // granted while 0 holds it, with a lower token
	ev(2, history.Invoke, history.FRead, 0)
	waitFor(lock.NameTokenOrder, 1)
	waitFor(lock.NameGrantOverlap, 0)
	ev(0, history.Invoke, history.FRelease, 0)
	ev(0, history.OK, history.FRelease, 0) // 0 says it held it all along
	ev(2, history.OK, history.FRead, 0)
	waitFor(lock.NameGrantOverlap, 1)
	if got := <-firsts; got != lock.NameTokenOrder {
		t.Errorf("first told %s, want %s", got, lock.NameTokenOrder)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, _ := tr.Status()
	if len(st.Online) != 3 || count(fence.NameWrongToken) != 0 {
		t.Errorf("online checks %+v, want grant-overlap, token-order, wrong-token", st.Online)
	}
	if out := logs.String(); strings.Count(out, "first violation") != 2 || !strings.Contains(out, "after=") {
		t.Errorf("log: %s", out)
	}
	for _, c := range []string{lock.NameGrantOverlap, lock.NameTokenOrder, fence.NameWrongToken, fence.NameDoubleWriter, config.NameMonotonic} {
		if !Online(c) {
			t.Errorf("Online(%s) = false", c)
		}
	}
	for _, c := range []string{lock.NameHerd, lock.NameLiveness, "integrity", config.NameConsistent, config.NameConvergence, config.NameCAS} {
		if Online(c) {
			t.Errorf("Online(%s) = true: it has no online version", c)
		}
	}
}

// TestTrackerHistoryQueueFull: a recorder far ahead of the online checks
// (here: a whole queue recorded before Follow started) never blocks; the
// checks stop, say so on the line and in the error.
func TestTrackerHistoryQueueFull(t *testing.T) {
	tr := started()
	rec := tr.Recorder(history.NewMemory())
	start := time.Now()
	for range histQueue + 10 {
		if _, err := rec.Append(history.Event{Process: 1, Type: history.Invoke, F: history.FRead, Key: "K"}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("recording took %v: the recorder waited for the checks", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := tr.Follow(ctx, filepath.Join(t.TempDir(), "none.jsonl"), []string{lock.NameTokenOrder}, slog.New(slog.DiscardHandler), nil)
	if !errors.Is(err, errHistoryBehind) {
		t.Fatalf("Follow: %v, want %v", err, errHistoryBehind)
	}
	st, _ := tr.Status()
	if len(st.Online) != 1 || !strings.Contains(st.Online[0].Stopped, "fell behind") {
		t.Errorf("online %+v", st.Online)
	}
}
