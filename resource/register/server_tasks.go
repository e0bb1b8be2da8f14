package register

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"time"
)

// The task table's handlers (election workload). Claims and completes
// follow the same path as reads and writes: decide (DecideTask), log
// durably, then change the state, all under mu.

func (s *server) handleInit(w http.ResponseWriter, r *http.Request) {
	var req InitRequest
	if err := decodeStrict(w, r, &req); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if msg := checkInit(req); msg != "" {
		httpError(w, http.StatusBadRequest, msg)
		return
	}
	rep, err := s.commitInit(req)
	if err != nil {
		s.logger.Error("commit failed", "op", OpInit, "service", req.Service, "err", err)
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, rep)
}

// checkInit returns why an init is malformed, "" if it is not.
func checkInit(req InitRequest) string {
	if req.Service == "" {
		return "empty service"
	}
	if len(req.Tasks) == 0 {
		return "no tasks"
	}
	for _, t := range req.Tasks {
		if t == "" {
			return "empty task name"
		}
	}
	return ""
}

// commitInit logs the init and adds the tasks the table does not have yet.
func (s *server) commitInit(req InitRequest) (InitReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return InitReply{}, err
	}
	svc := s.service(req.Service)
	e := Entry{
		Seq:         s.seq + 1,
		Wall:        time.Now().UnixNano(),
		Op:          OpInit,
		Token:       NoToken,
		Accepted:    true,
		Mode:        s.mode,
		Service:     req.Service,
		Tasks:       req.Tasks,
		Idempotency: s.idempotency,
	}
	step, err := stepTaskEntry(svc, e)
	if err != nil {
		return InitReply{}, err
	}
	if err := s.appendEntry(e); err != nil {
		return InitReply{}, err
	}
	svc = svc.apply(step)
	s.services[req.Service] = svc
	return InitReply{Added: len(step.tasks), Tasks: len(svc.Tasks), Seq: e.Seq}, nil
}

// service is the named service's table, or a new one. Called under mu.
func (s *server) service(name string) ServiceState {
	if svc, ok := s.services[name]; ok {
		return svc
	}
	return newService()
}

func (s *server) handleClaim(w http.ResponseWriter, r *http.Request) {
	s.serveTask(w, r, OpClaim)
}

func (s *server) handleComplete(w http.ResponseWriter, r *http.Request) {
	s.serveTask(w, r, OpComplete)
}

// serveTask answers a claim or complete, or, when the lost-reply fault
// picks it, commits it and then drops the reply.
func (s *server) serveTask(w http.ResponseWriter, r *http.Request, kind string) {
	var req TaskRequest
	if err := decodeStrict(w, r, &req); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if msg := checkTask(kind, req); msg != "" {
		httpError(w, http.StatusBadRequest, msg)
		return
	}
	rep, drop, err := s.commitTask(kind, req)
	if err != nil {
		s.logger.Error("commit failed", "op", kind, "service", req.Service, "task", req.Task, "err", err)
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if drop {
		s.dropReply(w, kind, rep.Seq)
		return
	}
	writeJSON(w, rep)
}

// checkTask returns why a claim or complete is malformed, "" if it is
// not. Malformed calls are answered 400 and never logged.
func checkTask(kind string, req TaskRequest) string {
	switch {
	case req.Service == "":
		return "empty service"
	case req.Task == "":
		return "empty task"
	case req.Term < 0:
		return fmt.Sprintf("negative term %d", req.Term)
	case kind == OpClaim && req.Result != "":
		return "a claim carries no result"
	case kind == OpComplete && req.Result == "":
		return "a complete must carry its result id"
	}
	return ""
}

// commitTask decides a claim or complete, logs it durably, and only then
// changes the table. drop says that the lost-reply fault picked this call;
// the entry records that before it is logged.
func (s *server) commitTask(kind string, req TaskRequest) (rep TaskReply, drop bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return TaskReply{}, false, err
	}
	svc := s.service(req.Service)
	task, known := svc.Tasks[req.Task]
	d := DecideTask(TaskInput{
		Mode:        s.mode,
		Idempotent:  s.idempotency == IdempotencyOn,
		ServiceTerm: svc.Term,
		Task:        task,
		Known:       known,
		Op:          kind,
		Term:        req.Term,
		Result:      req.Result,
	})
	drop = s.lostShare > 0 && rand.Float64() < s.lostShare
	e := Entry{
		Seq:          s.seq + 1,
		Wall:         time.Now().UnixNano(),
		Op:           kind,
		Token:        req.Term,
		HasToken:     true,
		Process:      req.Process,
		PID:          req.PID,
		Accepted:     d.Accepted,
		Reason:       d.Reason,
		Mode:         s.mode,
		Service:      req.Service,
		Task:         req.Task,
		Result:       d.Task.Result,
		StateAfter:   d.Task.State,
		Executions:   d.Task.Executions,
		Idempotency:  s.idempotency,
		ReplyDropped: drop,
	}
	// The same step Replay takes, so that the live table and a replayed
	// one cannot differ.
	step, err := stepTaskEntry(svc, e)
	if err != nil {
		return TaskReply{}, false, err
	}
	if err := s.appendEntry(e); err != nil {
		return TaskReply{}, false, err
	}
	s.services[req.Service] = svc.apply(step)
	return TaskReply{
		Accepted:   d.Accepted,
		Reason:     d.Reason,
		State:      d.Task.State,
		Term:       d.Term,
		Result:     d.Task.Result,
		Executions: d.Task.Executions,
		Seq:        e.Seq,
	}, drop, nil
}

// dropReply closes the connection without an answer: the entry is already
// durable, so the caller faces a committed operation whose outcome it
// cannot know. If the connection cannot be taken over, a 503 is the next
// best thing (also an unknown outcome to the client).
func (s *server) dropReply(w http.ResponseWriter, kind string, seq int64) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		httpError(w, http.StatusServiceUnavailable, "reply dropped (lost-reply fault)")
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		s.logger.Warn("lost-reply: cannot take over the connection", "err", err)
		httpError(w, http.StatusServiceUnavailable, "reply dropped (lost-reply fault)")
		return
	}
	s.logger.Debug("lost-reply: dropped a reply", "op", kind, "seq", seq)
	if err := conn.Close(); err != nil {
		s.logger.Debug("lost-reply: close", "err", err)
	}
}

func (s *server) handleScan(w http.ResponseWriter, r *http.Request) {
	var req ScanRequest
	if err := decodeStrict(w, r, &req); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Service == "" {
		httpError(w, http.StatusBadRequest, "empty service")
		return
	}
	s.mu.Lock()
	svc := copyService(s.service(req.Service))
	seq := s.seq
	s.mu.Unlock()
	writeJSON(w, ScanReply{Service: req.Service, Term: svc.Term, Tasks: svc.Tasks, Seq: seq})
}

func (s *server) handleLostReply(w http.ResponseWriter, r *http.Request) {
	var req LostReplyRequest
	if err := decodeStrict(w, r, &req); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if math.IsNaN(req.Share) || req.Share < 0 || req.Share > 1 {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("share %v: want 0.0 to 1.0", req.Share))
		return
	}
	s.mu.Lock()
	s.lostShare = req.Share
	s.mu.Unlock()
	s.logger.Info("lost-reply fault", "share", req.Share)
	writeJSON(w, req)
}
