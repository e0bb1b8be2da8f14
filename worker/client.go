package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/zkchaos/zkchaos/internal/queue"
)

// ErrExited is returned by Do when the worker exits before answering: the
// request may or may not have taken effect (record info).
var ErrExited = errors.New("worker process exited: outcome unknown")

// Proc is the controller's handle on one worker process.
//
// Events delivers, in order, the worker's unsolicited events (Event set)
// and late responses: a Message with Event empty and ID set on Events is
// the answer to a Do whose context had already ended (the caller recorded
// info; the late answer is evidence only).
type Proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	hello Message

	writeMu sync.Mutex
	nextID  int64

	mu      sync.Mutex
	pending map[int64]chan Message
	exited  bool

	// events is unbounded so the stdout reader never blocks on a slow
	// Events consumer (which would stall the responses behind it).
	events *queue.Queue[Message]
	stderr *tailWriter
	done   chan struct{}
	err    error
}

// Start starts the prepared cmd as a worker in its own process group and
// waits for its hello. On any failure the process is killed and reaped,
// and the error carries the tail of its stderr.
func Start(ctx context.Context, cmd *exec.Cmd, stderrLog io.Writer) (*Proc, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	if stderrLog == nil {
		stderrLog = io.Discard
	}
	tail := &tailWriter{w: stderrLog, max: 20}
	cmd.Stderr = tail
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s: %w", cmd.Path, err)
	}
	p := &Proc{
		cmd:     cmd,
		stdin:   stdin,
		pending: map[int64]chan Message{},
		events:  queue.New[Message](),
		stderr:  tail,
		done:    make(chan struct{}),
	}
	hello := make(chan Message, 1)
	go p.readLoop(stdout, hello)

	select {
	case m := <-hello:
		p.hello = m
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("worker pid %d exited before hello (%v); stderr tail:\n%s",
			cmd.Process.Pid, p.err, tail.String())
	case <-ctx.Done():
		_ = p.Kill()
		<-p.done
		return nil, fmt.Errorf("worker pid %d: no hello: %w; stderr tail:\n%s",
			cmd.Process.Pid, ctx.Err(), tail.String())
	}
}

// readLoop routes stdout lines until EOF, then reaps the process. Wait
// must come after the last read (os/exec closes the pipe in Wait).
func (p *Proc) readLoop(stdout io.Reader, hello chan<- Message) {
	r := bufio.NewReader(stdout)
	gotHello := false
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m Message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				fmt.Fprintf(p.stderr, "zkchaos: unparseable worker output: %q\n", line)
			} else if !gotHello && m.Event == EventHello {
				gotHello = true
				hello <- m
			} else {
				p.route(m)
			}
		}
		if err != nil {
			break
		}
	}
	werr := p.cmd.Wait()
	p.mu.Lock()
	p.exited = true
	p.err = werr
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
	p.mu.Unlock()
	p.events.Close()
	close(p.done)
}

// route hands a response to its waiting Do, or queues it as an event (an
// unsolicited event, or a response nobody waits for any more).
func (p *Proc) route(m Message) {
	if m.Event == "" && m.ID != 0 {
		p.mu.Lock()
		ch, ok := p.pending[m.ID]
		delete(p.pending, m.ID)
		p.mu.Unlock()
		if ok {
			ch <- m
			return
		}
	}
	p.events.Push(m)
}

// PID is the worker's process id (also its process group id).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Hello is the worker's first line.
func (p *Proc) Hello() Message { return p.hello }

// Do sends req with a fresh id and waits for its response. When ctx ends
// first it returns a Message holding only the request's ID, and ctx.Err();
// the response, if it ever comes, goes to Events. When the process exits first it returns an error wrapping
// ErrExited.
func (p *Proc) Do(ctx context.Context, req Request) (Message, error) {
	ch := make(chan Message, 1)
	p.mu.Lock()
	if p.exited {
		p.mu.Unlock()
		return Message{}, fmt.Errorf("%s: %w", req.F, ErrExited)
	}
	p.nextID++
	req.ID = p.nextID
	p.pending[req.ID] = ch
	p.mu.Unlock()

	line, err := json.Marshal(req)
	if err != nil {
		p.forget(req.ID)
		return Message{}, fmt.Errorf("encode request: %w", err)
	}
	line = append(line, '\n')
	// The write goes on in the background: a stopped worker with a full
	// pipe must not hold the caller past ctx, and a line must never be cut.
	wrote := make(chan error, 1)
	go func() {
		p.writeMu.Lock()
		defer p.writeMu.Unlock()
		_, err := p.stdin.Write(line)
		wrote <- err
	}()

	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return Message{}, fmt.Errorf("%s id %d: %w (%v)", req.F, req.ID, ErrExited, p.err)
			}
			return m, nil
		case err := <-wrote:
			if err != nil {
				p.forget(req.ID)
				return Message{}, fmt.Errorf("%s id %d: write to worker: %w: %w", req.F, req.ID, ErrExited, err)
			}
			wrote = nil
		case <-ctx.Done():
			if !p.forget(req.ID) {
				// The response won the race; it is ours, not a late one.
				if m, ok := <-ch; ok {
					return m, nil
				}
			}
			// The id goes back with the error: a late answer will carry it.
			return Message{ID: req.ID}, ctx.Err()
		}
	}
}

// forget stops waiting for id; false if the reader already took it.
func (p *Proc) forget(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.pending[id]
	delete(p.pending, id)
	return ok
}

// Events delivers unsolicited events and late responses in arrival order.
// It is never allowed to block the reader (unbounded) and is closed when
// the process has exited.
func (p *Proc) Events() <-chan Message { return p.events.Out() }

// CloseInput closes the worker's stdin: it releases, closes its session
// and exits.
func (p *Proc) CloseInput() error {
	if err := p.stdin.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		return fmt.Errorf("close worker stdin: %w", err)
	}
	return nil
}

// Kill SIGKILLs the worker's process group (a stopped process dies too).
func (p *Proc) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill worker pid %d: %w", p.cmd.Process.Pid, err)
	}
	return nil
}

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for exit 0); valid after Done.
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// StderrTail returns the last lines the worker wrote to stderr.
func (p *Proc) StderrTail() string { return p.stderr.String() }

// tailWriter copies to w and keeps the last max lines for error messages.
type tailWriter struct {
	mu      sync.Mutex
	w       io.Writer
	max     int
	partial []byte
	lines   []string
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.partial[:i]))
		t.partial = t.partial[i+1:]
		if len(t.lines) > t.max {
			t.lines = t.lines[len(t.lines)-t.max:]
		}
	}
	if len(t.partial) > 4096 {
		t.partial = t.partial[len(t.partial)-4096:]
	}
	// A failing log sink must not stall or kill the worker's stderr.
	_, _ = t.w.Write(b)
	return len(b), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.lines, "\n")
	if len(t.partial) > 0 {
		s += "\n" + string(t.partial)
	}
	return s
}
