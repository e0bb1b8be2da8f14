package register

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

// Follow reads the apply log at path while the register appends to it
// and hands each entry to each, in file order (the commit order), as soon
// as its line is complete: the live checks read the ground truth as it is
// written, not a copy. It waits for the file to appear and looks for new
// lines every poll (a read that finds nothing costs a system call; inotify
// would save nothing that matters at a few polls a second and does not
// see writes made from another mount namespace's view of a bind mount).
//
// A last line without its newline is held back until the rest comes: a
// reader can catch the register's write half way, and a register killed
// mid-write leaves a torn line that never completes (ReadApplyLog drops
// it, and so does Follow). When ctx ends, Follow reads what the file holds
// one last time and returns nil; then, as ReadApplyLog does, a last line
// that is whole but lacks its newline counts. A complete line that does not parse, or a
// file that shrinks under it, is an error: the log is not what the
// register writes, and nothing after it can be trusted.
func Follow(ctx context.Context, path string, poll time.Duration, each func(*Entry)) error {
	f, err := waitOpen(ctx, path, poll)
	if f == nil {
		return err
	}
	defer f.Close()
	t := &tail{f: f, path: path, each: each, chunk: make([]byte, 64<<10)}
	for {
		if err := t.drain(); err != nil {
			return err
		}
		if !ctxsleep.Sleep(ctx, poll) {
			return t.last()
		}
	}
}

// waitOpen opens path once it exists; nil, nil when ctx ends first.
func waitOpen(ctx context.Context, path string, poll time.Duration) (*os.File, error) {
	for {
		f, err := os.Open(path)
		switch {
		case err == nil:
			return f, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("follow apply log: %w", err)
		case !ctxsleep.Sleep(ctx, poll):
			return nil, nil
		}
	}
}

// tail is Follow's position in the file.
type tail struct {
	f      *os.File
	path   string
	each   func(*Entry)
	chunk  []byte
	buf    []byte // the start of a line whose newline has not come yet
	offset int64  // bytes read so far
	line   int    // lines handed on so far
	err    error  // the first error, kept for the last drain
}

// drain reads to the end of what the file holds now and hands on every
// complete line.
func (t *tail) drain() error {
	if t.err != nil {
		return t.err
	}
	if fi, err := t.f.Stat(); err == nil && fi.Size() < t.offset {
		t.err = fmt.Errorf("apply log %s shrank from %d to %d bytes while followed", t.path, t.offset, fi.Size())
		return t.err
	}
	for {
		n, err := t.f.Read(t.chunk)
		t.offset += int64(n)
		t.buf = append(t.buf, t.chunk[:n]...)
		if perr := t.lines(); perr != nil {
			t.err = perr
			return perr
		}
		switch {
		case errors.Is(err, io.EOF) || (err == nil && n == 0):
			return nil
		case err != nil:
			t.err = fmt.Errorf("follow apply log %s: %w", t.path, err)
			return t.err
		}
	}
}

// last is the look after ctx ended: the rest of the file, and a last
// line that is whole without its newline.
func (t *tail) last() error {
	if err := t.drain(); err != nil {
		return err
	}
	if e, err := parseEntry(t.buf); len(t.buf) > 0 && err == nil {
		t.each(&e)
		t.buf = t.buf[:0]
	}
	return nil
}

// lines hands on the complete lines in buf and keeps the rest.
func (t *tail) lines() error {
	rest := t.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		t.line++
		e, err := parseEntry(rest[:i])
		if err != nil {
			return fmt.Errorf("apply log %s line %d: bad entry: %w", t.path, t.line, err)
		}
		t.each(&e)
		rest = rest[i+1:]
	}
	t.buf = append(t.buf[:0], rest...)
	return nil
}
