package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/testlog"
)

// testState is the state of a run with only what abort, watch and the
// teardown's judgement use.
func testState(t *testing.T, hard context.Context) *runState {
	st, cancel := newRunState(hard, nil, testlog.Logger(t), nil, store.Status{})
	t.Cleanup(cancel)
	return st
}

// TestAbortKeepsFirstFailure: the first failure is the one reported, and
// the run's context ends with it.
func TestAbortKeepsFirstFailure(t *testing.T) {
	c := testState(t, context.Background())
	first := errors.New("results folder: write history: no space left on device")
	c.abort(first)
	c.abort(errors.New("register exited during the run"))
	if err := c.harnessError(); err != first {
		t.Fatalf("harness error %v, want the first one", err)
	}
	if context.Cause(c.runCtx) != first {
		t.Fatalf("run context: %v", context.Cause(c.runCtx))
	}
}

// TestWatchHistoryFailure: a history on a full device stops the run as
// soon as an append fails, whoever appended.
func TestWatchHistoryFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	w, err := history.Create(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := testState(t, context.Background())
	done := make(chan struct{})
	go c.watch(w, &registerProc{done: make(chan struct{})}, done)
	defer close(done)
	if _, err := w.Append(history.Event{Process: history.Nemesis, Type: history.Invoke, F: "pause"}); err == nil {
		t.Fatal("append to /dev/full succeeded")
	}
	select {
	case <-c.runCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("run not stopped after the history failed")
	}
	if err := c.harnessError(); err == nil || !strings.HasPrefix(err.Error(), "results folder: write history") ||
		!strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("harness error %v", err)
	}
}

// TestWatchRegisterExit: a register that exits during the run (as it does
// when its apply log cannot be written) stops the run with its last
// words; one stopped by the controller does not.
func TestWatchRegisterExit(t *testing.T) {
	dir := t.TempDir()
	words := "register failed: append to apply log: no space left on device"
	start := func() *registerProc {
		t.Helper()
		reg, err := startRegister(context.Background(), placement{}, os.Args[0], []string{envFakeRegister + "=" + words}, runSecrets{register: "s"},
			filepath.Join(dir, "apply.log"), filepath.Join(dir, "register.log"), "on", "on")
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	path := filepath.Join(dir, "history.jsonl")
	w, err := history.Create(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	c := testState(t, context.Background())
	done := make(chan struct{})
	go c.watch(w, start(), done)
	select {
	case <-c.runCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("run not stopped after the register exited")
	}
	close(done)
	err = c.harnessError()
	if err == nil || !strings.HasPrefix(err.Error(), "register exited during the run (exit status 1)") || !strings.Contains(err.Error(), words) {
		t.Fatalf("harness error %v", err)
	}

	c = testState(t, context.Background())
	reg := start()
	done = make(chan struct{})
	go c.watch(w, reg, done)
	reg.stop(5 * time.Second)
	<-reg.done
	time.Sleep(200 * time.Millisecond) // the watch has seen the exit
	defer close(done)
	if err := c.harnessError(); err != nil {
		t.Fatalf("a register stopped by the controller is a failure: %v", err)
	}
}
