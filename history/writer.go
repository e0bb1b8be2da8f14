package history

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Writer appends events to history.jsonl as the run goes. Every event is
// handed to the kernel when it is appended (so a SIGKILLed controller loses
// nothing the kernel has), and the file is fsync'd at least every second and
// on Close (so a crashed machine loses at most a second).
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	buf    *bufio.Writer
	start  time.Time
	next   int64
	dirty  bool
	err    error
	failed chan struct{} // closed when err is first set
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// Create opens path for writing (truncating it) and starts the fsync loop.
// start is the run's origin: every event's Time is measured from it on the
// monotonic clock.
func Create(path string, start time.Time) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create history %s: %w", path, err)
	}
	w := &Writer{f: f, buf: bufio.NewWriterSize(f, 64<<10), start: start,
		failed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go w.syncLoop()
	return w, nil
}

// Append opens an existing history for appending (a resumed soak): the
// events already there are returned and kept, indexes continue after the
// last, and start must be the first segment's origin, so that times keep
// growing across the gap. A line torn by a killed writer (no newline,
// which every reader drops, see Read) is cut off first: appending after
// it would turn it into damage in the middle.
func Append(path string, start time.Time) (*Writer, []Event, error) {
	res, err := ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open history %s: %w", path, err)
	}
	if err := cutTornTail(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("history %s: %w", path, err)
	}
	w := &Writer{f: f, buf: bufio.NewWriterSize(f, 64<<10), start: start,
		failed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if n := len(res.Events); n > 0 {
		w.next = res.Events[n-1].Index + 1
	}
	go w.syncLoop()
	return w, res.Events, nil
}

// cutTornTail truncates f after its last newline and leaves the offset at
// the end.
func cutTornTail(f *os.File) error {
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	keep := int64(bytes.LastIndexByte(b, '\n') + 1)
	if keep < int64(len(b)) {
		if err := f.Truncate(keep); err != nil {
			return fmt.Errorf("cut the torn last line: %w", err)
		}
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		return fmt.Errorf("seek: %w", err)
	}
	return nil
}

// Since is the run clock: nanoseconds since the run's origin.
func (w *Writer) Since() int64 { return int64(time.Since(w.start)) }

// Append assigns the event its index and time, writes it and returns it.
// Index and time are assigned under one lock so that index order is time
// order.
func (w *Writer) Append(e Event) (Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return e, fmt.Errorf("append to closed history")
	}
	if w.err != nil {
		return e, w.err
	}
	e.Index = w.next
	e.Time = w.Since()
	b, err := e.Marshal()
	if err != nil {
		return e, fmt.Errorf("encode history event: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.buf.Write(b); err != nil {
		return e, w.fail(fmt.Errorf("write history: %w", err))
	}
	if err := w.buf.Flush(); err != nil {
		return e, w.fail(fmt.Errorf("write history: %w", err))
	}
	w.next++
	w.dirty = true
	return e, nil
}

// fail keeps the first error (w.mu held): every later Append returns it,
// and Failed tells whoever watches.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
		close(w.failed)
	}
	return w.err
}

// Failed is closed once a write or fsync of the history has failed. From
// then on nothing more can be recorded, so the controller stops the run
// at once rather than carry on for minutes recording nothing; it watches
// this because appends come from many parts (clients, nemesis) that can
// only log an error.
func (w *Writer) Failed() <-chan struct{} { return w.failed }

// Err is the first write or fsync error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) syncLoop() {
	defer close(w.done)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if w.dirty && w.err == nil {
				if err := w.f.Sync(); err != nil {
					w.fail(fmt.Errorf("fsync history: %w", err))
				}
				w.dirty = false
			}
			w.mu.Unlock()
		}
	}
}

// Close flushes, fsyncs and closes the file. It is safe to call twice.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if ferr := w.buf.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("flush history: %w", ferr)
	}
	if serr := w.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("fsync history: %w", serr)
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close history: %w", cerr)
	}
	return err
}

// Recorder is what the controller's parts need to write history; tests
// give them an in-memory one.
type Recorder interface {
	Append(e Event) (Event, error)
	Since() int64
}

var _ Recorder = (*Writer)(nil)
