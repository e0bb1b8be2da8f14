package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/zkchaos/zkchaos/internal/logcap"
)

// ErrExited is returned by Do when the worker exits before answering: the
// request may or may not have taken effect (record info).
var ErrExited = errors.New("worker process exited: outcome unknown")

// ErrProtocol is returned by Do once the worker has broken the protocol
// (a line that is not JSON, longer than MaxLine, or answers an id nobody
// asked): what it said may have been lost, so its state is unknown and it
// must not be asked anything more.
var ErrProtocol = errors.New("worker broke the protocol")

// ErrRetired is returned by Do on a process the caller retired.
var ErrRetired = errors.New("worker process retired")

// MaxLine bounds one stdout line. Protocol lines are a few hundred bytes;
// a longer line is dropped as it is read (never held in memory whole) and
// is a protocol error, so a worker cannot grow the controller's memory
// without bound.
const MaxLine = 64 << 10

// Handler records what a worker says. The handle calls it one call at a
// time, in the order the worker wrote its lines, so the order of a
// worker's stdout is the order of what the handler records: a lost event
// written before a release answer is handled before that answer.
type Handler interface {
	// Event is an unsolicited event (Event is set). The hello is handed to
	// it too, first, once Start has accepted the worker, so that what it
	// says (the session) is recorded before anything the worker wrote
	// after it.
	Event(m Message)
	// Complete ends a request: m is its response, or err says why there
	// is none (ctx ended, the worker exited or broke the protocol), and m
	// then holds only req.ID (0 if the request was never sent). It is
	// called exactly once per Do, before Do returns.
	Complete(req Request, m Message, err error)
	// Late is the response to req after Complete was called for it with
	// an error (the caller recorded info): evidence of what happened.
	Late(req Request, m Message)
	// ProtocolError reports a line that breaks the protocol; from then on
	// every Do fails with an error wrapping ErrProtocol.
	ProtocolError(err error)
}

// Options configure a worker handle.
type Options struct {
	// Handler receives the worker's lines (required).
	Handler Handler
	// Log receives the worker's stderr and the handle's notes about it,
	// capped: the first LogHead bytes and the last LogTail bytes are kept,
	// and a note in between says how many bytes and lines were dropped.
	Log              io.Writer
	LogHead, LogTail int64
	// OnLogError is told, once, that Log failed (a full disk).
	OnLogError func(error)
}

// call is one request sent (or about to be) and what became of it.
type call struct {
	req   Request
	state callState
	done  chan struct{} // closed once Complete has returned
	resp  Message
	err   error
}

type callState int

const (
	waiting   callState = iota // sent, no answer yet
	answered                   // Complete called with the answer
	abandoned                  // Complete called with an error; a late answer goes to Late
)

// Proc is the controller's handle on one worker process.
type Proc struct {
	cmd     *exec.Cmd
	handler Handler
	stdin   io.WriteCloser
	hello   Message
	// execAt is when Start began the exec; helloAfter is how long after it
	// the hello line was read (HelloAfter).
	execAt     time.Time
	helloAfter time.Duration
	log        *logcap.Capped
	tail       *logcap.Tail

	writeMu sync.Mutex

	// hmu serializes every call to the handler, so that what the reader
	// records and what Do records when it gives up form one order. Lock
	// order: hmu, then mu.
	hmu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	calls   map[int64]*call // waiting or abandoned
	exited  bool
	broken  error
	retired bool
	closed  bool // stdin closed

	// accepted tells the reader, once, whether Start kept the worker.
	accepted chan bool
	done     chan struct{}
	err      error
}

// New prepares a handle for cmd; Start starts it. The two steps let the
// handler refer to the Proc before the first line arrives.
func New(cmd *exec.Cmd, opts Options) *Proc {
	w := opts.Log
	if w == nil {
		w = io.Discard
	}
	log := logcap.NewCapped(w, opts.LogHead, opts.LogTail, opts.OnLogError)
	return &Proc{cmd: cmd, handler: opts.Handler, log: log, tail: logcap.NewTail(log, 20),
		calls: map[int64]*call{}, accepted: make(chan bool, 1), done: make(chan struct{})}
}

// Start starts the worker in its own process group and waits for its
// hello, which must be its first line. On any failure the process is
// killed and reaped, and the error carries the tail of its stderr.
func (p *Proc) Start(ctx context.Context) error {
	if p.handler == nil {
		return errors.New("worker: no handler")
	}
	cmd := p.cmd
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("worker stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("worker stdout: %w", err)
	}
	p.stdin = stdin
	cmd.Stderr = p.tail
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	p.execAt = time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker %s: %w", cmd.Path, err)
	}
	hello := make(chan error, 1)
	go p.readLoop(stdout, hello)

	select {
	case err := <-hello:
		if err == nil {
			p.accepted <- true
			return nil
		}
		_ = p.Kill()
		<-p.done
		return fmt.Errorf("worker pid %d: %w; stderr tail:\n%s", cmd.Process.Pid, err, p.tail.String())
	case <-p.done:
		return fmt.Errorf("worker pid %d exited before hello (%v); stderr tail:\n%s",
			cmd.Process.Pid, p.err, p.tail.String())
	case <-ctx.Done():
		p.accepted <- false
		_ = p.Kill()
		<-p.done
		return fmt.Errorf("worker pid %d: no hello: %w; stderr tail:\n%s",
			cmd.Process.Pid, ctx.Err(), p.tail.String())
	}
}

// readLoop handles stdout lines until EOF, then reaps the process and
// ends what is still waiting. Wait must come after the last read
// (os/exec closes the pipe in Wait). Lines after a hello are handled only
// once Start has accepted the worker; after a failed start they are
// drained unread.
func (p *Proc) readLoop(stdout io.Reader, hello chan<- error) {
	lr := newLineReader(stdout, MaxLine)
	const (
		before = iota
		running
		failed
	)
	phase := before
	for {
		line, over, err := lr.next()
		switch {
		case phase == failed || (over == 0 && len(line) == 0):
		case phase == before:
			herr := fmt.Errorf("%w: a first line of %d bytes, over the %d-byte limit, was dropped", ErrProtocol, over, MaxLine)
			if over == 0 {
				herr = p.takeHello(line)
			}
			hello <- herr
			phase = failed
			if herr == nil && <-p.accepted {
				phase = running
				p.hmu.Lock()
				p.handler.Event(p.hello)
				p.hmu.Unlock()
			}
		case over > 0:
			p.protocolError(fmt.Errorf("%w: a stdout line of %d bytes, over the %d-byte limit, was dropped", ErrProtocol, over, MaxLine))
		default:
			p.handleLine(line)
		}
		if err != nil {
			break
		}
	}
	werr := p.cmd.Wait()
	p.exit(werr)
	_ = p.log.Close() // a failure was reported through OnLogError
	close(p.done)
}

// takeHello accepts the first line only if it is the hello.
func (p *Proc) takeHello(line []byte) error {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil || m.Event != EventHello {
		return fmt.Errorf("%w: first line is not a hello: %.200q", ErrProtocol, line)
	}
	p.hello, p.helloAfter = m, time.Since(p.execAt)
	return nil
}

// handleLine hands one line to the handler, under hmu.
func (p *Proc) handleLine(line []byte) {
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		p.protocolError(fmt.Errorf("%w: a stdout line is not JSON (%v): %.200q", ErrProtocol, err, line))
		return
	}
	if m.Event != "" {
		p.hmu.Lock()
		p.handler.Event(m)
		p.hmu.Unlock()
		return
	}
	if m.ID == 0 {
		p.protocolError(fmt.Errorf("%w: a line that is neither a response nor an event: %.200q", ErrProtocol, line))
		return
	}
	p.hmu.Lock()
	defer p.hmu.Unlock()
	p.mu.Lock()
	c, ok := p.calls[m.ID]
	if ok {
		delete(p.calls, m.ID)
	}
	p.mu.Unlock()
	switch {
	case !ok:
		p.protocolErrorLocked(fmt.Errorf("%w: a response to id %d, which is not awaited: %.200q", ErrProtocol, m.ID, line))
	case c.state == waiting:
		c.state, c.resp = answered, m
		p.handler.Complete(c.req, m, nil)
		close(c.done)
	default:
		p.handler.Late(c.req, m)
		p.closeIfDone()
	}
}

// protocolError notes the first breach in the log and tells the handler;
// every waiting request ends with it. Later breaches are only noted.
func (p *Proc) protocolError(err error) {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	p.protocolErrorLocked(err)
}

func (p *Proc) protocolErrorLocked(err error) {
	fmt.Fprintf(p.log, "zkchaos: %v\n", err)
	p.mu.Lock()
	first := p.broken == nil
	if first {
		p.broken = err
	}
	waiting := p.takeWaiting(false)
	p.mu.Unlock()
	if !first {
		return
	}
	p.handler.ProtocolError(err)
	for _, c := range waiting {
		p.completeLocked(c, err)
	}
}

// takeWaiting removes the waiting calls (under mu) and marks them
// abandoned (a late answer may still come) or gone.
func (p *Proc) takeWaiting(gone bool) []*call {
	var cs []*call
	for id, c := range p.calls {
		if c.state != waiting {
			if gone {
				delete(p.calls, id)
			}
			continue
		}
		cs = append(cs, c)
		c.state = abandoned
		if gone {
			delete(p.calls, id)
		}
	}
	return cs
}

// completeLocked ends c with err (hmu held).
func (p *Proc) completeLocked(c *call, err error) {
	c.resp, c.err = Message{ID: c.req.ID}, err
	p.handler.Complete(c.req, c.resp, err)
	close(c.done)
}

// exit ends every waiting request with ErrExited; abandoned ones will
// never be answered.
func (p *Proc) exit(werr error) {
	p.hmu.Lock()
	defer p.hmu.Unlock()
	p.mu.Lock()
	p.exited, p.err = true, werr
	waiting := p.takeWaiting(true)
	p.mu.Unlock()
	for _, c := range waiting {
		p.completeLocked(c, fmt.Errorf("%s id %d: %w (%v)", c.req.F, c.req.ID, ErrExited, werr))
	}
}

// PID is the worker's process id (also its process group id).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Hello is the worker's first line.
func (p *Proc) Hello() Message { return p.hello }

// HelloAfter is the time from the start of the worker's exec to its hello
// line read here, once Start has returned nil: the process's start-up,
// its package initialisation and its first session (the hello carries
// it). What a run waits for each worker it starts.
func (p *Proc) HelloAfter() time.Duration { return p.helloAfter }

// Do sends req with a fresh id and waits until its completion has been
// handed to the handler (Complete), then returns the response. When ctx
// ends first, Complete gets ctx.Err() and the request is abandoned: its
// answer, if it ever comes, goes to Late. A worker that exited, broke the
// protocol or was retired gets nothing; Complete gets the reason.
func (p *Proc) Do(ctx context.Context, req Request) (Message, error) {
	p.mu.Lock()
	var refuse error
	switch {
	case p.broken != nil:
		refuse = p.broken
	case p.exited:
		refuse = fmt.Errorf("%s: %w", req.F, ErrExited)
	case p.retired:
		refuse = fmt.Errorf("%s: %w", req.F, ErrRetired)
	}
	var c *call
	if refuse == nil {
		p.nextID++
		req.ID = p.nextID
		c = &call{req: req, done: make(chan struct{})}
		p.calls[req.ID] = c
	}
	p.mu.Unlock()
	if refuse != nil {
		p.hmu.Lock()
		p.handler.Complete(req, Message{}, refuse)
		p.hmu.Unlock()
		return Message{}, refuse
	}

	line, err := json.Marshal(req)
	if err != nil {
		p.giveUp(c, fmt.Errorf("encode request: %w", err), false)
		return c.resp, c.err
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
		case <-c.done:
			return c.resp, c.err
		case err := <-wrote:
			if err != nil {
				p.giveUp(c, fmt.Errorf("%s id %d: write to worker: %w: %w", req.F, req.ID, ErrExited, err), false)
				return c.resp, c.err
			}
			wrote = nil
		case <-ctx.Done():
			p.giveUp(c, ctx.Err(), true)
			return c.resp, c.err
		}
	}
}

// giveUp ends c with err unless the reader has already completed it; it
// returns once c is complete either way. abandon keeps c for a late
// answer (it reached the worker, or may have).
func (p *Proc) giveUp(c *call, err error, abandon bool) {
	p.hmu.Lock()
	p.mu.Lock()
	mine := c.state == waiting
	if mine {
		c.state = abandoned
		if !abandon {
			delete(p.calls, c.req.ID)
		}
	}
	p.mu.Unlock()
	if mine {
		p.completeLocked(c, err)
	}
	p.hmu.Unlock()
	<-c.done
}

// Retire tells the handle the caller will ask nothing more: the worker's
// stdin is closed (it releases, closes its session and exits) as soon as
// no answer is outstanding, that is now, or once the late answer to the
// request the caller gave up on has been handled.
func (p *Proc) Retire() {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	p.closeIfDone()
}

// closeIfDone closes stdin of a retired worker that owes no answer.
func (p *Proc) closeIfDone() {
	p.mu.Lock()
	if !p.retired || len(p.calls) > 0 || p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	_ = p.closeStdin()
}

// CloseInput closes the worker's stdin: it releases, closes its session
// and exits.
func (p *Proc) CloseInput() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.closeStdin()
}

func (p *Proc) closeStdin() error {
	if err := p.stdin.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("close worker stdin: %w", err)
	}
	return nil
}

// InputClosed reports whether the worker's stdin has been closed.
func (p *Proc) InputClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
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

// Done is closed once the process has exited, been reaped, its last
// line handled and its log written.
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
