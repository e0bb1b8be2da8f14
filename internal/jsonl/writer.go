package jsonl

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Writer writes values to a JSON-lines file a run keeps as it goes (the
// runbook monitor's samples, a soak's resource samples): each line is
// handed to the kernel in one write as soon as it is taken, as the
// history's are, so a controller killed mid-run loses no line it had and
// leaves at most a last line cut off (the damage Each forgives). Close
// fsyncs. After its first error it writes nothing more and keeps that
// error. Safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	err    error
	closed bool
	what   string // the writer's owner, for its errors
}

// Create starts a Writer of path (0644), emptied when trunc, appended to
// otherwise (a file that goes on over several segments of a run). what
// names the writer's owner in its errors ("monitor", "resources").
func Create(path, what string, trunc bool) (*Writer, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if trunc {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", what, path, err)
	}
	return &Writer{f: f, what: what}, nil
}

// Write appends v as one line.
func (w *Writer) Write(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return w.err
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("%s: encode: %w", w.what, err)
		return w.err
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("%s: write %s: %w", w.what, w.f.Name(), err)
	}
	return w.err
}

// Close fsyncs and closes the file; it returns the first error the
// writer met. Closing twice returns the same.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	err := w.err
	if serr := w.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("%s: fsync: %w", w.what, serr)
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%s: close: %w", w.what, cerr)
	}
	w.err = err
	return err
}
