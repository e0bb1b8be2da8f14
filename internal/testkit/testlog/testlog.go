// Package testlog sends the logs of code under test to the test's output.
// Client goroutines and worker stderr copiers can outlive a test by a
// moment, and writing to a finished test's output panics, so what comes
// after the test is dropped.
package testlog

import (
	"io"
	"log/slog"
	"sync"
	"testing"
)

// Writer forwards to t's output until t ends, then drops.
func Writer(t testing.TB) io.Writer {
	w := &lateSafe{w: t.Output()}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

// Logger logs at Info to Writer(t).
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type lateSafe struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (w *lateSafe) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(b), nil
	}
	return w.w.Write(b)
}
