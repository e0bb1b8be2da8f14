package worker

import (
	"bufio"
	"bytes"
	"cmp"
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

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/resource/pgfence"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Config configures a worker process.
type Config struct {
	ZK       []string
	Register string // base URL of the register
	// Postgres is the DSN of the PostgreSQL resource (lock workload):
	// when set, reads and writes go there instead of to the register,
	// with RegisterSecret as the password.
	Postgres string
	// Process is the logical process number, passed to the register so
	// its apply log names who wrote.
	Process        int
	SessionTimeout time.Duration
	// Workload is recipes.WorkloadLock ("" too) or WorkloadConfig: which
	// verbs the worker serves and which registry Recipe names.
	Workload string
	Recipe   string
	Token    string
	Root     string
	// ZKAuth is the ZooKeeper credential (recipes.AuthEnv) and
	// RegisterSecret the register's (register.SecretEnv); both come from
	// the environment and are never serialised.
	ZKAuth         recipes.Auth `json:"-"`
	RegisterSecret string       `json:"-"`
	Logger         *slog.Logger
}

// ProfileEnv, set to a folder in a built-in worker's environment, has it
// write its CPU profile there (worker-N.cpu.pprof, N its process number)
// until it exits: chaos bench --profile sets it.
const ProfileEnv = "ZKCHAOS_WORKER_CPUPROFILE"

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
	w := &worker{
		cfg:    cfg,
		log:    log,
		out:    out,
		pid:    os.Getpid(),
		grants: map[string]recipes.Grant{},
	}
	rc := recipes.Config{
		Servers:        cfg.ZK,
		SessionTimeout: cfg.SessionTimeout,
		Root:           cfg.Root,
		Token:          cfg.Token,
		Auth:           cfg.ZKAuth,
		Logger:         log,
	}
	if err := w.newSubject(rc); err != nil {
		return fmt.Errorf("worker: %w", err)
	}

	first, err := w.awaitSession(ctx)
	if err != nil {
		w.closer()
		return fmt.Errorf("worker: waiting for a ZooKeeper session: %w", err)
	}
	hello := Message{Event: EventHello, PID: w.pid, Session: first.Session, Password: first.Password, Protocol: Protocol}
	if cfg.Workload != recipes.WorkloadLock {
		hello.Workload = cfg.Workload // the default workload's hello stays as it was
	}
	w.emit(hello)
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
	cfg Config
	log *slog.Logger
	pid int
	// lock (lock workload) or conf (config workload) is the subject.
	lock recipes.Lock
	reg  *register.Client
	// res is where the lock's reads and writes go: reg, or PostgreSQL.
	res  resource
	conf recipes.ConfigClient
	// closer closes the subject's session; creds tell its password, nil
	// if it cannot.
	closer func() error
	creds  recipes.SessionCredentials
	// events are the subject's events as protocol lines, in order; closed
	// after Close.
	events <-chan Message
	// handlers serve the workload's verbs.
	handlers map[string]func(context.Context, Request) Message
	// afterReply, when a handler sets it, runs once its answer is written.
	afterReply func()

	outMu sync.Mutex
	out   io.Writer

	// leader is how an election candidate runs its tasks (the zero value
	// outside the election).
	leader recipes.Leader

	// grants are the locks granted and not yet released (including ones
	// since lost), for the release reply. Only the serving goroutine
	// touches it.
	grants map[string]recipes.Grant
}

// subjectBuilders make the worker's subject for each workload it serves;
// the file of each workload's requests registers its builder
// (registerSubject), so a new workload adds no case here.
var subjectBuilders = map[string]func(*worker, recipes.Config) error{}

// registerSubject declares how the worker serves workload; called from
// init.
func registerSubject(workload string, build func(*worker, recipes.Config) error) {
	if _, dup := subjectBuilders[workload]; dup {
		panic("worker: duplicate workload " + workload)
	}
	subjectBuilders[workload] = build
}

func init() { registerSubject(recipes.WorkloadLock, (*worker).newLockSubject) }

// newSubject builds the subject of the worker's workload ("" is the lock).
func (w *worker) newSubject(rc recipes.Config) error {
	build, ok := subjectBuilders[cmp.Or(w.cfg.Workload, recipes.WorkloadLock)]
	if !ok {
		return fmt.Errorf("unknown workload %q", w.cfg.Workload)
	}
	return build(w, rc)
}

// newLockSubject builds the lock recipe of cfg.Recipe.
func (w *worker) newLockSubject(rc recipes.Config) error {
	lock, err := recipes.New(w.cfg.Recipe, rc)
	if err != nil {
		return err
	}
	w.useLock(lock, w.lockMessage)
	return nil
}

// useLock makes lock the subject; line turns its events into protocol
// lines (one translator only: a second reader of the recipe's events would
// take some of them, the hello's session among them).
func (w *worker) useLock(lock recipes.Lock, line func(recipes.SessionEvent) Message) {
	w.lock = lock
	w.reg = register.NewClient(w.cfg.Register, registerTimeout, w.cfg.RegisterSecret)
	w.res = w.lockResource()
	w.closer = lock.Close
	w.creds, _ = lock.(recipes.SessionCredentials)
	w.events = translate(lock.Events(), line)
	w.handlers = map[string]func(context.Context, Request) Message{
		"acquire": w.acquire, "release": w.release, "read": w.read, "write": w.write,
	}
}

// lockResource is where the lock's reads and writes go: PostgreSQL with
// --postgres (connected now, not inside the first critical section),
// else the register.
func (w *worker) lockResource() resource {
	if w.cfg.Postgres == "" {
		return w.reg
	}
	pg, err := pgfence.NewClient(w.cfg.Postgres, w.cfg.RegisterSecret, registerTimeout)
	if err != nil {
		// chaos-worker checked the DSN before the worker started.
		w.log.Error("postgres", "err", err)
		return w.reg
	}
	if err := pg.Connect(context.Background()); err != nil {
		// The first request connects again, and says why if it fails.
		w.log.Warn("postgres: no connection yet", "err", err)
	}
	return pg
}

// resource is the fenced resource of the lock workload: the register's
// client or pgfence's, which speak the same requests and replies. Their
// errors are classified by register.IsDefinite (pgfence's never are).
type resource interface {
	Read(ctx context.Context, req register.ReadRequest) (register.Reply, error)
	Write(ctx context.Context, req register.WriteRequest) (register.Reply, error)
}

// translate turns a subject's events into protocol lines, in order, until
// the subject closes its events.
func translate[E any](in <-chan E, line func(E) Message) <-chan Message {
	out := make(chan Message)
	go func() {
		defer close(out)
		for ev := range in {
			out <- line(ev)
		}
	}()
	return out
}

// awaitSession waits for the first session: the hello line promises one.
// It returns the connected line, whose session and password the hello
// carries.
func (w *worker) awaitSession(ctx context.Context) (Message, error) {
	for {
		select {
		case m, ok := <-w.events:
			if !ok {
				return Message{}, errors.New("recipe closed")
			}
			if m.Event == EventSession && m.State == StateConnected {
				return m, nil
			}
			w.log.Info("event before hello", "event", m.Event, "state", m.State)
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// forwardEvents writes the subject's events as they happen, concurrently
// with serving requests.
func (w *worker) forwardEvents(done chan<- struct{}) {
	defer close(done)
	for m := range w.events {
		w.emit(m)
	}
}

// lockMessage is the line for a lock recipe's event: a session change or
// a lost lock.
func (w *worker) lockMessage(ev recipes.SessionEvent) Message {
	if g := ev.Lost; g != nil {
		return Message{Event: EventLost, Key: g.Key, Token: ptr(g.Token), Node: g.Node,
			State: ev.State, Session: sessionHex(g.Session)}
	}
	return w.sessionMessage(ev)
}

// sessionMessage is the line for a session change; a connected one
// carries the password when the subject can tell it.
func (w *worker) sessionMessage(ev recipes.SessionEvent) Message {
	m := Message{Event: EventSession, State: ev.State, Session: sessionHex(ev.Session)}
	if ev.State == recipes.StateConnected {
		m.Password = w.password(ev.Session)
	}
	return m
}

// password is the session's password in base64 when the recipe can tell
// it, so that a nemesis can expire the session from outside while this
// process keeps running; "" otherwise (the field is optional).
func (w *worker) password(session int64) string {
	if w.creds == nil {
		return ""
	}
	pw, ok := w.creds.SessionPassword(session)
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
	if err := w.closer(); err != nil {
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
	serve, ok := w.handlers[req.F]
	if !ok {
		w.emit(Message{ID: req.ID, Type: Fail, Error: fmt.Sprintf("unknown f %q", req.F)})
		return
	}
	if req.Key == "" {
		w.emit(Message{ID: req.ID, Type: Fail, Error: req.F + ": missing key"})
		return
	}
	m := serve(ctx, req)
	m.ID, m.Key = req.ID, req.Key
	w.emit(m)
	if after := w.afterReply; after != nil {
		w.afterReply = nil
		after()
	}
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

// zkTimeout bounds a request that waits for a lost connection (a
// release, or a config workload request): after twice the session timeout
// the session is expired on the server anyway, and the controller gets an
// answer rather than a worker stuck forever.
func (w *worker) zkTimeout() time.Duration {
	return max(2*w.cfg.SessionTimeout, 5*time.Second)
}

func (w *worker) release(ctx context.Context, req Request) Message {
	g, had := w.grants[req.Key]
	delete(w.grants, req.Key)
	rctx, cancel := context.WithTimeout(ctx, w.zkTimeout())
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
	rep, err := w.res.Read(ctx, register.ReadRequest{Key: req.Key, Token: &tok, Process: w.cfg.Process, PID: w.pid})
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
	if req.WorkMS > 0 && !ctxsleep.Sleep(ctx, time.Duration(req.WorkMS)*time.Millisecond) {
		return Message{Type: Fail, Token: ptr(tok), Error: "write: cancelled during work: " + ctx.Err().Error()}
	}
	rep, err := w.res.Write(ctx, register.WriteRequest{Key: req.Key, Value: *req.Value, Token: &tok, Process: w.cfg.Process, PID: w.pid})
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
