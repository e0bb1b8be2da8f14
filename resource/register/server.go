package register

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Config configures Serve.
type Config struct {
	// Listen is host:port; port 0 picks a free one (reported to ready).
	Listen string
	// LogPath is the apply log; an existing one is replayed and continued.
	LogPath string
	// Mode is ModeOff, ModeOn or ModeStrict. For the task table, on and
	// strict both mean term fencing.
	Mode string
	// Idempotency is IdempotencyOn or IdempotencyOff for the task table
	// (see DecideTask); "" means on.
	Idempotency string
	// Secret is what every call must present (see auth.go); "" admits
	// every call, for in-process tests only.
	Secret string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// maxBody bounds a request body: requests are a few hundred bytes, and an
// unbounded read would let a confused client exhaust memory.
const maxBody = 1 << 20

// shutdownGrace bounds how long Serve waits for in-flight requests after
// ctx is done; each holds the commit mutex for one fsync at most.
const shutdownGrace = 5 * time.Second

// server is the state behind the handlers. Everything under mu: the apply
// log's order is the commit order, so deciding, logging and updating the
// state must be one critical section.
type server struct {
	mode        string
	idempotency string
	logger      *slog.Logger
	gate        gate

	mu       sync.Mutex
	log      *os.File
	seq      int64
	state    map[string]KeyState
	services map[string]ServiceState
	// lostShare is the lost-reply fault's share of task calls whose reply
	// is dropped (0: off).
	lostShare float64
	broken    error // set once an append failed; the log's tail is then unknown
	closed    bool

	// fatal carries the first append failure to Serve, which stops: a
	// register whose ground truth cannot be written must not keep answering.
	fatal chan error
}

// Serve runs the register until ctx is done. ready is called once, with the
// bound address, when the register can accept requests. A clean shutdown
// returns nil.
func Serve(ctx context.Context, cfg Config, ready func(addr string)) error {
	if !validMode(cfg.Mode) {
		return fmt.Errorf("register: unknown fencing mode %q (want off, on or strict)", cfg.Mode)
	}
	if cfg.Idempotency == "" {
		cfg.Idempotency = IdempotencyOn
	}
	if _, err := idempotent(cfg.Idempotency); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if cfg.LogPath == "" {
		return errors.New("register: no apply log path")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	f, entries, err := openApplyLog(cfg.LogPath)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	tables, err := ReplayAll(entries)
	if err != nil {
		f.Close()
		return fmt.Errorf("register: replay %s: %w", cfg.LogPath, err)
	}
	s := &server{
		mode:        cfg.Mode,
		idempotency: cfg.Idempotency,
		logger:      logger,
		log:         f,
		state:       tables.Keys,
		services:    tables.Services,
		fatal:       make(chan error, 1),
		gate:        gate{secret: []byte(cfg.Secret)},
	}
	if n := len(entries); n > 0 {
		s.seq = entries[n-1].Seq
	}
	defer s.closeLog()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("register: listen %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	logger.Info("register serving", "addr", addr, "mode", cfg.Mode, "idempotency", cfg.Idempotency,
		"log", cfg.LogPath, "replayed", len(entries), "keys", len(tables.Keys),
		"services", len(tables.Services), "secret_required", cfg.Secret != "")

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(addr)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-served:
		// Serve only returns early on a listener failure.
		return fmt.Errorf("register: serve: %w", err)
	case err := <-s.fatal:
		runErr = fmt.Errorf("register: apply log failed, stopping: %w", err)
	}
	shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shCtx); err != nil {
		logger.Warn("register shutdown incomplete", "err", err)
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && runErr == nil {
		runErr = fmt.Errorf("register: serve: %w", err)
	}
	if err := s.closeLog(); err != nil && runErr == nil {
		runErr = fmt.Errorf("register: %w", err)
	}
	logger.Info("register stopped", "seq", s.lastSeq(), "refused_calls", s.gate.refused.Load())
	return runErr
}

// openApplyLog opens (or creates) the log, reads what is there and cuts off
// a torn last line, so that the next append starts on a fresh line instead
// of gluing itself to garbage that would then sit in the middle of the log.
func openApplyLog(path string) (*os.File, []Entry, error) {
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open apply log: %w", err)
	}
	entries, end, needNewline, err := parseLog(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("apply log %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat apply log: %w", err)
	}
	if fi.Size() > end {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cut torn tail of apply log: %w", err)
		}
	}
	if needNewline {
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("terminate last apply log line: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("sync apply log: %w", err)
	}
	if created {
		// The file's directory entry must be durable too, or a crash can
		// lose the whole log even though every line in it was fsync'd.
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return f, entries, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open log directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync log directory: %w", err)
	}
	return nil
}

func (s *server) closeLog() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("close apply log: %w", err)
	}
	return nil
}

func (s *server) lastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", s.handleWrite)
	mux.HandleFunc("POST /read", s.handleRead)
	mux.HandleFunc("GET /state", s.handleState)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("POST /tasks/init", s.handleInit)
	mux.HandleFunc("POST /task/claim", s.handleClaim)
	mux.HandleFunc("POST /task/complete", s.handleComplete)
	mux.HandleFunc("POST /task/scan", s.handleScan)
	mux.HandleFunc("POST /faults/lost-reply", s.handleLostReply)
	return s.gate.wrap(mux, s)
}

// errUnavailable marks commit failures that are the register's fault (log
// broken or closed), answered with 503 rather than 400.
var errUnavailable = errors.New("register unavailable")

// op is a validated read or write, ready to commit.
type op struct {
	kind     string
	key      string
	value    int64
	hasToken bool
	token    int64
	process  int
	pid      int
}

func (s *server) handleWrite(w http.ResponseWriter, r *http.Request) {
	var req WriteRequest
	if !decodeKeyed(w, r, &req, &req.Key) {
		return
	}
	if req.Token == nil && s.mode != ModeOff {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("token required on a write in fencing mode %s", s.mode))
		return
	}
	o := op{kind: OpWrite, key: req.Key, value: req.Value, process: req.Process, pid: req.PID}
	if !setToken(w, &o, req.Token) {
		return
	}
	s.serveCommit(w, o)
}

func (s *server) handleRead(w http.ResponseWriter, r *http.Request) {
	var req ReadRequest
	if !decodeKeyed(w, r, &req, &req.Key) {
		return
	}
	o := op{kind: OpRead, key: req.Key, process: req.Process, pid: req.PID}
	if !setToken(w, &o, req.Token) {
		return
	}
	s.serveCommit(w, o)
}

// setToken rejects negative tokens: -1 is NoToken, and a negative token
// would slip under the initial fence of every key.
func setToken(w http.ResponseWriter, o *op, tok *int64) bool {
	if tok == nil {
		return true
	}
	if *tok < 0 {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("negative token %d", *tok))
		return false
	}
	o.hasToken, o.token = true, *tok
	return true
}

func (s *server) serveCommit(w http.ResponseWriter, o op) {
	reply, err := s.commit(o)
	if err != nil {
		s.logger.Error("commit failed", "op", o.kind, "key", o.key, "err", err)
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, reply)
}

// commit decides, logs durably, and only then changes the state: if the
// append fails the state stays as the log says, and the reply is an error
// so the client treats the outcome as unknown.
func (s *server) commit(o op) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Reply{}, err
	}
	st, ok := s.state[o.key]
	if !ok {
		st = initialState
	}
	accepted, reason := Decide(s.mode, o.kind, st, o.hasToken, o.token)
	e := Entry{
		Seq:       s.seq + 1,
		Wall:      time.Now().UnixNano(),
		Op:        o.kind,
		Key:       o.key,
		Token:     NoToken,
		HasToken:  o.hasToken,
		Value:     o.value,
		Process:   o.process,
		PID:       o.pid,
		Accepted:  accepted,
		Reason:    reason,
		PrevValue: st.Value,
		PrevToken: st.Token,
		PrevFence: st.Fence,
		Mode:      s.mode,
	}
	if o.hasToken {
		e.Token = o.token
	}
	if o.kind == OpRead {
		e.Value = st.Value
	}
	next, err := applyEntry(st, e)
	if err != nil {
		return Reply{}, err
	}
	if err := s.appendEntry(e); err != nil {
		return Reply{}, err
	}
	s.state[o.key] = next
	return Reply{
		Accepted: accepted,
		Value:    next.Value,
		Token:    next.Token,
		Fence:    next.Fence,
		Reason:   reason,
		Seq:      e.Seq,
	}, nil
}

// usable refuses commits once the register is shutting down or its log
// failed. Called under mu.
func (s *server) usable() error {
	if s.closed {
		return fmt.Errorf("%w: shutting down", errUnavailable)
	}
	if s.broken != nil {
		return fmt.Errorf("%w: apply log failed earlier: %v", errUnavailable, s.broken)
	}
	return nil
}

// appendEntry makes e durable and advances seq; a failed append breaks the
// register for good and tells Serve to stop. Called under mu.
func (s *server) appendEntry(e Entry) error {
	line, err := encodeLine(e)
	if err != nil {
		return fmt.Errorf("encode entry: %w", err)
	}
	if err := s.appendLine(line); err != nil {
		s.broken = err
		select {
		case s.fatal <- err:
		default:
		}
		return fmt.Errorf("%w: %v", errUnavailable, err)
	}
	s.seq = e.Seq
	return nil
}

func (s *server) appendLine(line []byte) error {
	if _, err := s.log.Write(line); err != nil {
		return fmt.Errorf("append to apply log: %w", err)
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("fsync apply log: %w", err)
	}
	return nil
}

func (s *server) handleState(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make(map[string]KeyState, len(s.state))
	for k, v := range s.state {
		out[k] = v
	}
	s.mu.Unlock()
	writeJSON(w, out)
}

// Health is the body of GET /healthz.
type Health struct {
	OK          bool   `json:"ok"`
	Mode        string `json:"mode"`
	Idempotency string `json:"idempotency,omitempty"`
	Seq         int64  `json:"seq"`
}

func (s *server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	h := Health{OK: s.broken == nil && !s.closed, Mode: s.mode, Idempotency: s.idempotency, Seq: s.seq}
	s.mu.Unlock()
	if !h.OK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(h)
		return
	}
	writeJSON(w, h)
}

// decodeKeyed decodes a request that must name a key (key points into
// req) and answers 400 when it is malformed or names none; false means the
// answer has been sent.
func decodeKeyed(w http.ResponseWriter, r *http.Request, req any, key *string) bool {
	if err := decodeStrict(w, r, req); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return false
	}
	if *key == "" {
		httpError(w, http.StatusBadRequest, "empty key")
		return false
	}
	return true
}

// decodeStrict refuses unknown fields and trailing data: a misspelt
// "tokne" would otherwise be an unfenced write that looks fenced to its
// sender.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty body")
		}
		return fmt.Errorf("bad JSON body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("bad JSON body: trailing data after the object")
	}
	return nil
}

// errorBody is the JSON body of every non-200 reply.
type errorBody struct {
	Error string `json:"error"`
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	// The entry is already durable; a client that hung up meanwhile only
	// loses its answer, which it must treat as unknown anyway.
	_ = enc.Encode(v)
}

// encodeLine renders one apply-log line. HTML escaping is off so that a
// reason reads "stale token 100 < fence 101" to whoever greps the log.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the newline
		return nil, err
	}
	return buf.Bytes(), nil
}
