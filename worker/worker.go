package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkchaos/zkchaos/recipes"
	"github.com/zkchaos/zkchaos/register"
)

// Config configures a worker process.
type Config struct {
	ZK       []string
	Register string // base URL of the register
	// Process is the logical process number, passed to the register so
	// its apply log names who wrote.
	Process        int
	SessionTimeout time.Duration
	Recipe         string
	Token          string
	Root           string
	// ZKAuth is the ZooKeeper credential (recipes.AuthEnv) and
	// RegisterSecret the register's (register.SecretEnv); both come from
	// the environment and are never serialised.
	ZKAuth         recipes.Auth `json:"-"`
	RegisterSecret string       `json:"-"`
	Logger         *slog.Logger
}

// registerTimeout bounds one register call. A call that runs out is
// answered info (it may have landed), so this only has to be longer than a
// healthy register ever takes.
const registerTimeout = 5 * time.Second

// Run is the worker process: it speaks the protocol on in and out until in
// ends, then closes the session (which ends every grant at once), reports
// the close and the grants it ended, and returns nil.
//
// Requests are served one at a time in order, and each read or write
// checks Held right before the register call and nowhere else: a worker
// paused with a request waiting in its stdin must, on resuming, behave as a
// GC-paused client does, so the harness sees what the recipe really allows.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	lock, err := recipes.New(cfg.Recipe, recipes.Config{
		Servers:        cfg.ZK,
		SessionTimeout: cfg.SessionTimeout,
		Root:           cfg.Root,
		Token:          cfg.Token,
		Auth:           cfg.ZKAuth,
		Logger:         log,
	})
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w := &worker{
		cfg:    cfg,
		log:    log,
		lock:   lock,
		reg:    register.NewClient(cfg.Register, registerTimeout, cfg.RegisterSecret),
		out:    out,
		pid:    os.Getpid(),
		grants: map[string]recipes.Grant{},
	}

	first, err := w.awaitSession(ctx)
	if err != nil {
		lock.Close()
		return fmt.Errorf("worker: waiting for a ZooKeeper session: %w", err)
	}
	w.emit(Message{Event: EventHello, PID: w.pid, Session: sessionHex(first), Password: w.password(first)})
	forwarded := make(chan struct{})
	go w.forwardEvents(forwarded)

	lines := make(chan []byte, 64)
	go readLines(in, lines, log)
	var runErr error
serve:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break serve
			}
			w.handle(ctx, line)
		case <-ctx.Done():
			runErr = ctx.Err()
			break serve
		}
	}
	w.shutdown()
	select {
	case <-forwarded:
	case <-time.After(2 * time.Second):
		log.Warn("session events not all written before exit")
	}
	return runErr
}

// worker is the state of one worker process.
type worker struct {
	cfg  Config
	log  *slog.Logger
	lock recipes.Lock
	reg  *register.Client
	pid  int

	outMu sync.Mutex
	out   io.Writer

	// grants are the locks granted and not yet released (including ones
	// since lost), for the release reply. Only the serving goroutine
	// touches it.
	grants map[string]recipes.Grant
}

// awaitSession waits for the first session: the hello line promises one.
func (w *worker) awaitSession(ctx context.Context) (int64, error) {
	for {
		select {
		case ev, ok := <-w.lock.Events():
			if !ok {
				return 0, errors.New("recipe closed")
			}
			if ev.Lost == nil && ev.State == recipes.StateConnected {
				return ev.Session, nil
			}
			w.log.Info("session event before hello", "state", ev.State)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// forwardEvents turns the recipe's events into session and lost lines, as
// they happen, concurrently with serving requests.
func (w *worker) forwardEvents(done chan<- struct{}) {
	defer close(done)
	for ev := range w.lock.Events() {
		if g := ev.Lost; g != nil {
			w.emit(Message{Event: EventLost, Key: g.Key, Token: ptr(g.Token), Node: g.Node,
				State: ev.State, Session: sessionHex(g.Session)})
			continue
		}
		m := Message{Event: EventSession, State: ev.State, Session: sessionHex(ev.Session)}
		if ev.State == recipes.StateConnected {
			m.Password = w.password(ev.Session)
		}
		w.emit(m)
	}
}

// password is the session's password in base64 when the recipe can tell
// it, so that a nemesis can expire the session from outside while this
// process keeps running; "" otherwise (the field is optional).
func (w *worker) password(session int64) string {
	sc, ok := w.lock.(recipes.SessionCredentials)
	if !ok {
		return ""
	}
	pw, ok := sc.SessionPassword(session)
	if !ok {
		return ""
	}
	return base64.StdEncoding.EncodeToString(pw)
}

// readLines feeds stdin lines to the serving loop and closes lines at EOF.
// A bufio.Reader rather than a Scanner: an overlong line must become a
// fail response, not the end of the worker.
func readLines(in io.Reader, lines chan<- []byte, log *slog.Logger) {
	defer close(lines)
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			lines <- line
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Warn("reading stdin", "err", err)
			}
			return
		}
	}
}

// emit writes one line; writes are serialised so lines never interleave,
// and each is a single Write on an unbuffered stdout, so it is flushed.
func (w *worker) emit(m Message) {
	b, err := json.Marshal(m)
	if err != nil {
		w.log.Error("encoding message", "err", err)
		return
	}
	b = append(b, '\n')
	w.outMu.Lock()
	defer w.outMu.Unlock()
	if _, err := w.out.Write(b); err != nil {
		w.log.Error("writing stdout", "err", err)
	}
}

// shutdown closes the session rather than releasing lock by lock: one
// closeSession deletes every node of the session at once, bounded by the
// client's close timeout, while releases would each wait on a connection
// that may be gone. The recipe reports the close and every grant it ended
// (lost, state closed) before it closes its events.
func (w *worker) shutdown() {
	clear(w.grants)
	if err := w.lock.Close(); err != nil {
		w.log.Warn("closing recipe", "err", err)
	}
}

func ptr[T any](v T) *T { return &v }

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// handle serves one request line. Every path answers exactly once; a bad
// line is answered fail, never a crash, because the worker is the subject
// and must outlive a confused controller.
func (w *worker) handle(ctx context.Context, line []byte) {
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		w.emit(Message{ID: readableID(line), Type: Fail, Error: "malformed request: " + err.Error()})
		return
	}
	if req.F != "acquire" && req.F != "release" && req.F != "read" && req.F != "write" {
		w.emit(Message{ID: req.ID, Type: Fail, Error: fmt.Sprintf("unknown f %q", req.F)})
		return
	}
	if req.Key == "" {
		w.emit(Message{ID: req.ID, Type: Fail, Error: req.F + ": missing key"})
		return
	}
	var m Message
	switch req.F {
	case "acquire":
		m = w.acquire(ctx, req)
	case "release":
		m = w.release(ctx, req)
	case "read":
		m = w.read(ctx, req)
	case "write":
		m = w.write(ctx, req)
	}
	m.ID, m.Key = req.ID, req.Key
	w.emit(m)
}

// readableID digs the id out of a line that is not a valid request, so
// the controller can still match the fail to what it sent.
func readableID(line []byte) int64 {
	var probe struct {
		ID int64 `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil {
		return probe.ID
	}
	return 0
}

func (w *worker) acquire(ctx context.Context, req Request) Message {
	if req.TimeoutMS <= 0 {
		return Message{Type: Fail, Error: "acquire: timeout_ms must be positive"}
	}
	var wakeups atomic.Int64
	g, err := w.lock.Acquire(recipes.WithWakeups(ctx, &wakeups), req.Key, time.Duration(req.TimeoutMS)*time.Millisecond)
	m := w.acquireReply(req.Key, g, err)
	if wc, ok := w.lock.(recipes.WakeupCounter); ok && wc.CountsWakeups() {
		m.Wakeups = ptr(wakeups.Load())
	}
	return m
}

func (w *worker) acquireReply(key string, g recipes.Grant, err error) Message {
	switch {
	case err == nil:
		w.grants[key] = g
		return Message{Type: OK, Token: ptr(g.Token), Node: g.Node}
	case errors.Is(err, recipes.ErrUnknown):
		return Message{Type: Info, Error: err.Error()}
	case errors.Is(err, recipes.ErrTimeout):
		return Message{Type: Fail, Error: "timeout"}
	default:
		return Message{Type: Fail, Error: err.Error()}
	}
}

// releaseTimeout bounds a release that waits for a lost connection: after
// twice the session timeout the session is expired on the server anyway,
// and the controller gets info rather than a worker stuck forever.
func (w *worker) releaseTimeout() time.Duration {
	return max(2*w.cfg.SessionTimeout, 5*time.Second)
}

func (w *worker) release(ctx context.Context, req Request) Message {
	g, had := w.grants[req.Key]
	delete(w.grants, req.Key)
	rctx, cancel := context.WithTimeout(ctx, w.releaseTimeout())
	defer cancel()
	err := w.lock.Release(rctx, req.Key)
	m := Message{Node: g.Node}
	if had {
		m.Token = ptr(g.Token)
	}
	switch {
	case err == nil:
		m.Type = OK
	case errors.Is(err, recipes.ErrRevoked):
		m.Type, m.Error = Fail, "revoked"
	case errors.Is(err, recipes.ErrNotHeld):
		m.Type, m.Error = Fail, "not held"
	case errors.Is(err, recipes.ErrUnknown):
		m.Type, m.Error = Info, err.Error()
	default:
		m.Type, m.Error = Fail, err.Error()
	}
	return m
}

// read and write check Held immediately before the register call; the
// only thing in between is a write's WorkMS, the protected work that a
// real holder does after its check (no ZooKeeper round trip, no re-check).
func (w *worker) read(ctx context.Context, req Request) Message {
	g, ok := w.lock.Held(req.Key)
	if !ok {
		return Message{Type: Fail, Error: "not holding " + req.Key}
	}
	tok := g.Token
	rep, err := w.reg.Read(ctx, register.ReadRequest{Key: req.Key, Token: &tok, Process: w.cfg.Process, PID: w.pid})
	return registerReply(rep, err, tok, nil)
}

func (w *worker) write(ctx context.Context, req Request) Message {
	if req.Value == nil {
		return Message{Type: Fail, Error: "write: missing value"}
	}
	g, ok := w.lock.Held(req.Key)
	if !ok {
		return Message{Type: Fail, Error: "not holding " + req.Key}
	}
	tok := g.Token
	if req.WorkMS > 0 {
		t := time.NewTimer(time.Duration(req.WorkMS) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return Message{Type: Fail, Token: ptr(tok), Error: "write: cancelled during work: " + ctx.Err().Error()}
		case <-t.C:
		}
	}
	rep, err := w.reg.Write(ctx, register.WriteRequest{Key: req.Key, Value: *req.Value, Token: &tok, Process: w.cfg.Process, PID: w.pid})
	return registerReply(rep, err, tok, req.Value)
}

// registerReply maps the register's answer: a transport error or 5xx may
// have been applied (info), a 4xx surely was not (fail), a rejection is a
// definite fail carrying the register's fence.
func registerReply(rep register.Reply, err error, tok int64, written *int64) Message {
	m := Message{Token: ptr(tok)}
	switch {
	case err != nil && register.IsDefinite(err):
		m.Type, m.Error = Fail, err.Error()
		m.Value = written
	case err != nil:
		m.Type, m.Error = Info, err.Error()
		m.Value = written
	case rep.Accepted:
		m.Type, m.Accepted = OK, ptr(true)
		m.Value = ptr(rep.Value)
		if written != nil {
			m.Value = written
		} else {
			// A read also reports the register's token of the last
			// accepted write, so the register checker can tell which
			// write a value came from (a stale one restoring an old value).
			m.CurrentToken = ptr(rep.Token)
		}
	default:
		m.Type, m.Accepted = Fail, ptr(false)
		m.CurrentToken = ptr(rep.Fence)
		m.Value = written
		m.Error = "rejected"
		if rep.Reason != "" {
			m.Error = "rejected: " + rep.Reason
		}
	}
	return m
}
