package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMemoryIndexesAndTimes: concurrent appends get indexes 0..n-1 in
// the order they are kept, times that never go back, and Events is a copy.
func TestMemoryIndexesAndTimes(t *testing.T) {
	m := NewMemory()
	var wg sync.WaitGroup
	for p := 0; p < 8; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if _, err := m.Append(Event{Process: Process(p), Type: Invoke, F: FRead}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	evs := m.Events()
	if len(evs) != 800 {
		t.Fatalf("%d events, want 800", len(evs))
	}
	for i, e := range evs {
		if e.Index != int64(i) {
			t.Fatalf("event %d has index %d", i, e.Index)
		}
		if i > 0 && e.Time < evs[i-1].Time {
			t.Fatalf("time goes back at %d: %d after %d", i, e.Time, evs[i-1].Time)
		}
	}
	evs[0].F = "changed"
	if m.Events()[0].F != FRead {
		t.Fatal("Events shares its slice with the recorder")
	}
}

// TestMemoryErr: with Err set nothing is kept and every Append fails.
func TestMemoryErr(t *testing.T) {
	m := NewMemory()
	m.Err = errors.New("no space left on device")
	if _, err := m.Append(Event{Type: Invoke, F: FRead}); err != m.Err {
		t.Fatalf("Append: %v", err)
	}
	if n := len(m.Events()); n != 0 {
		t.Fatalf("%d events kept after a failed append", n)
	}
}

// TestWriterFailed: the first write error closes Failed and is kept; a
// healthy writer's Failed stays open.
func TestWriterFailed(t *testing.T) {
	dir := t.TempDir()
	ok, err := Create(filepath.Join(dir, "ok.jsonl"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if _, err := ok.Append(Event{Type: Invoke, F: FRead}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ok.Failed():
		t.Fatal("Failed closed on a healthy writer")
	default:
	}
	path := filepath.Join(dir, "full.jsonl")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = w.Append(Event{Type: Invoke, F: FRead})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("append to /dev/full: %v", err)
	}
	select {
	case <-w.Failed():
	default:
		t.Fatal("Failed not closed after a write error")
	}
	if w.Err() != err {
		t.Fatalf("Err = %v, want the first error %v", w.Err(), err)
	}
	if _, err2 := w.Append(Event{Type: Invoke, F: FRead}); err2 != err {
		t.Fatalf("second append: %v, want the first error", err2)
	}
}
