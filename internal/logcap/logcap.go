// Package logcap bounds what a child process's log costs: Capped keeps the
// head and the tail of a stream and says in the log itself what it dropped
// between them, and Tail keeps the last lines for an error message. A
// worker that floods its stderr (408 MB in 26 s was seen) must neither fill
// the results folder nor the controller's memory, and whoever reads the
// log must be told that something is missing, and how much.
package logcap

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Capped passes the first head bytes through to its sink, keeps the last
// tail bytes in memory, and on Close writes a note saying how many bytes
// and lines were dropped in between, followed by the tail. Memory is
// bounded by tail (allocated only once the head is full). Write never
// fails, so the process whose output it carries is never stalled or
// broken by its log; the sink's first error is kept (Err) and reported to
// onErr once, so the owner can act on a full disk.
type Capped struct {
	mu     sync.Mutex
	w      io.Writer
	head   int64
	tail   int64
	onErr  func(error)
	err    error
	closed bool

	written int64  // bytes passed to w as head
	ring    []byte // the last bytes after the head, len ≤ tail
	start   int    // oldest byte of ring once it is full
	dropped int64  // bytes evicted from ring (never written)
	lines   int64  // newlines among them
}

// NewCapped caps what goes to w at head + tail bytes (plus the note).
// onErr may be nil.
func NewCapped(w io.Writer, head, tail int64, onErr func(error)) *Capped {
	return &Capped{w: w, head: max(head, 0), tail: max(tail, 0), onErr: onErr}
}

// Write keeps b: in the head while there is room, else in the tail.
func (c *Capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(b)
	if c.closed {
		return n, nil
	}
	if room := c.head - c.written; room > 0 {
		k := min(int64(len(b)), room)
		c.sink(b[:k])
		c.written += k
		b = b[k:]
	}
	c.keep(b)
	return n, nil
}

// keep appends b to the tail ring, counting what falls out of it.
func (c *Capped) keep(b []byte) {
	if len(b) == 0 {
		return
	}
	if c.tail == 0 {
		c.drop(b)
		return
	}
	if int64(len(b)) >= c.tail {
		// Everything in the ring and the front of b fall out.
		c.drop(c.ordered())
		cut := int64(len(b)) - c.tail
		c.drop(b[:cut])
		c.ring = append(c.ring[:0], b[cut:]...)
		c.start = 0
		return
	}
	for len(b) > 0 {
		if int64(len(c.ring)) < c.tail {
			k := min(len(b), int(c.tail)-len(c.ring))
			c.ring = append(c.ring, b[:k]...)
			b = b[k:]
			continue
		}
		// Full: overwrite the oldest bytes in place.
		k := min(len(b), len(c.ring)-c.start)
		c.drop(c.ring[c.start : c.start+k])
		copy(c.ring[c.start:], b[:k])
		c.start = (c.start + k) % len(c.ring)
		b = b[k:]
	}
}

func (c *Capped) drop(b []byte) {
	c.dropped += int64(len(b))
	c.lines += int64(bytes.Count(b, []byte{'\n'}))
}

// ordered is the ring's content, oldest first.
func (c *Capped) ordered() []byte {
	if c.start == 0 {
		return c.ring
	}
	return append(append([]byte(nil), c.ring[c.start:]...), c.ring[:c.start]...)
}

// sink writes to w, keeping the first error.
func (c *Capped) sink(b []byte) {
	if c.err != nil || len(b) == 0 {
		return
	}
	if _, err := c.w.Write(b); err != nil {
		c.err = err
		if c.onErr != nil {
			c.onErr(err)
		}
	}
}

// Close writes the note (if anything was dropped) and the tail. Later
// writes are discarded. It does not close the sink, which is the owner's.
func (c *Capped) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.err
	}
	c.closed = true
	if c.dropped > 0 {
		c.sink(fmt.Appendf(nil, "\n[zkchaos: log capped at %d head + %d tail bytes: %d bytes (%d lines) dropped here; the last %d bytes follow]\n",
			c.head, c.tail, c.dropped, c.lines, len(c.ring)))
	}
	c.sink(c.ordered())
	c.ring = nil
	return c.err
}

// Err is the sink's first write error.
func (c *Capped) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Tail forwards everything to w and keeps the last max lines (each cut to
// 4 KiB) for error messages. Write never fails: a failing sink must not
// stall the process whose output it carries.
type Tail struct {
	mu      sync.Mutex
	w       io.Writer
	max     int
	partial []byte
	lines   []string
}

// maxPartial bounds an unterminated line kept by Tail.
const maxPartial = 4096

// NewTail keeps the last max lines of what goes through to w.
func NewTail(w io.Writer, max int) *Tail { return &Tail{w: w, max: max} }

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		line := t.partial[:i]
		if len(line) > maxPartial {
			line = line[len(line)-maxPartial:]
		}
		t.lines = append(t.lines, string(line))
		t.partial = t.partial[i+1:]
		if len(t.lines) > t.max {
			t.lines = t.lines[len(t.lines)-t.max:]
		}
	}
	if len(t.partial) > maxPartial {
		t.partial = append([]byte(nil), t.partial[len(t.partial)-maxPartial:]...)
	}
	_, _ = t.w.Write(b)
	return len(b), nil
}

// String is the kept lines, oldest first, and an unterminated last line.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, "\n")
	if len(t.partial) > 0 {
		s += "\n" + string(t.partial)
	}
	return s
}

// Last is the last non-empty line kept, or "".
func (t *Tail) Last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := strings.TrimSpace(string(t.partial)); s != "" {
		return s
	}
	for i := len(t.lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(t.lines[i]); s != "" {
			return s
		}
	}
	return ""
}
