package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/resource/register"
)

// The election workload's worker side (docs/worker-protocol.md,
// "Election"): a candidate campaigns by taking the service's lock under
// recipes.ElectionRoot with the run's recipe
// (docs/background.md#leader-election: the smallest ephemeral sequential
// node leads, each candidate watches its predecessor, the term is the
// node's czxid, and the seed recipe confirms its node's ephemeralOwner is
// its own session before it acts); as leader it claims and completes tasks
// in the register's task table under its term. A lost leadership is a
// demoted event.

func init() { registerSubject(recipes.WorkloadElection, (*worker).newElectionSubject) }

// newElectionSubject builds the candidate of cfg.Recipe.
func (w *worker) newElectionSubject(rc recipes.Config) error {
	rc.Root = recipes.ElectionRoot
	lock, leader, err := recipes.NewCandidate(w.cfg.Recipe, rc)
	if err != nil {
		return err
	}
	w.useLock(lock, w.electionMessage)
	w.leader = leader
	w.handlers = map[string]func(context.Context, Request) Message{
		"campaign": w.acquire, "resign": w.release,
		"claim": w.taskCall, "complete": w.taskCall, "scan": w.scan,
	}
	return nil
}

// electionMessage is lockMessage with a lost grant reported as demoted.
func (w *worker) electionMessage(ev recipes.SessionEvent) Message {
	m := w.lockMessage(ev)
	if m.Event == EventLost {
		m.Event = EventDemoted
	}
	return m
}

// leading is the service this worker leads and its term, checked
// immediately before a task call (as write checks its lock).
func (w *worker) leading() (string, recipes.Grant, bool) {
	for service := range w.grants {
		if g, ok := w.lock.Held(service); ok {
			return service, g, true
		}
	}
	return "", recipes.Grant{}, false
}

// taskCall claims or completes task Key under the worker's term. A complete
// spends WorkMS on the task's work first and presents a result id. The work
// is cancelled the moment the worker may no longer act as leader (a task
// executor must be cancellable: docs/background.md#leader-election), and
// leadership is checked again before the call and before each retry: a
// deposed leader sends nothing more. What remains is the window a pause
// makes (a stopped process cannot check), which only fencing closes. A call
// whose reply was lost is retried up to register.MaxTaskRetries times; the answer is
// the last reply's.
func (w *worker) taskCall(ctx context.Context, req Request) Message {
	service, g, ok := w.leading()
	if !ok {
		return Message{Type: Fail, Error: "not leading"}
	}
	if req.Key == "" {
		return Message{Type: Fail, Error: req.F + ": missing key (the task)"}
	}
	if req.F != "complete" {
		return w.send(ctx, req, service, g, w.reg.Claim)
	}
	m, ok := w.work(ctx, service, g, time.Duration(req.WorkMS)*time.Millisecond)
	if ok {
		m = w.send(ctx, req, service, g, w.reg.Complete)
	}
	if w.leader.TrustCallback && m.Type != OK {
		// bug (callback-done): the leader's callback returned, so the
		// task "is done", whatever happened to it.
		w.log.Warn("complete not confirmed by the resource, reported done anyway", "task", req.Key, "answer", m.Error)
		m = Message{Type: OK, Token: ptr(g.Token)}
	}
	return m
}

// send makes a claim or complete call for task Key under g's term.
func (w *worker) send(ctx context.Context, req Request, service string, g recipes.Grant,
	call func(context.Context, register.TaskRequest) (register.TaskReply, error)) Message {
	tr := register.TaskRequest{Service: service, Task: req.Key, Term: g.Token, Process: w.cfg.Process, PID: w.pid}
	if req.F == "complete" {
		tr.Result = fmt.Sprintf("r-%d-%s", g.Token, req.Key)
	}
	var rep register.TaskReply
	var err error
	for try := 0; try <= register.MaxTaskRetries; try++ {
		if try > 0 && !w.stillLeading(service, g) {
			w.log.Warn("task call: reply lost and leadership gone: not retrying", "f", req.F, "task", req.Key)
			break
		}
		rep, err = call(ctx, tr)
		if err == nil || register.IsDefinite(err) || ctx.Err() != nil {
			break
		}
		w.log.Warn("task call: reply lost, retrying", "f", req.F, "task", req.Key, "try", try+1, "err", err)
	}
	return taskReply(rep, err, g.Token)
}

// workPoll is how often a task's work checks that its worker still leads.
const workPoll = 5 * time.Millisecond

// work spends d on a task's work while the worker leads service under g,
// and checks again at the end; ok is false (with the answer) when the
// work was cancelled or leadership ended. A KeepWorking leader (the
// no-cancel zoo) neither watches nor checks.
func (w *worker) work(ctx context.Context, service string, g recipes.Grant, d time.Duration) (Message, bool) {
	cancelled := func() Message {
		return Message{Type: Fail, Token: ptr(g.Token), Error: "complete: cancelled during work: " + ctx.Err().Error()}
	}
	if w.leader.KeepWorking {
		if d > 0 && !ctxsleep.Sleep(ctx, d) {
			return cancelled(), false
		}
		return Message{}, true
	}
	deadline := time.Now().Add(d)
	for {
		if !w.stillLeading(service, g) {
			return Message{Type: Fail, Token: ptr(g.Token), Error: "complete: leadership lost during the work: task cancelled, nothing sent"}, false
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Message{}, true
		}
		if !ctxsleep.Sleep(ctx, min(left, workPoll)) {
			return cancelled(), false
		}
	}
}

// stillLeading reports whether the worker leads service under the same
// grant as g, right now; a KeepWorking leader does not ask.
func (w *worker) stillLeading(service string, g recipes.Grant) bool {
	if w.leader.KeepWorking {
		return true
	}
	h, ok := w.lock.Held(service)
	return ok && h.Token == g.Token && h.Node == g.Node && h.Session == g.Session
}

// taskReply is the answer for a task call: ok when accepted or already
// done (idempotency: the stored result is the answer), fail when refused
// (stale term, unknown task), info when the outcome is unknown.
func taskReply(rep register.TaskReply, err error, term int64) Message {
	m := Message{Token: ptr(term)}
	switch {
	case err != nil && register.IsDefinite(err):
		m.Type, m.Error = Fail, err.Error()
	case err != nil:
		m.Type, m.Error = Info, err.Error()
	default:
		m.CurrentToken, m.State, m.Digest = ptr(rep.Term), rep.State, rep.Result
		m.Accepted = ptr(rep.Accepted)
		switch {
		case rep.Accepted || rep.Reason == register.ReasonDone:
			m.Type = OK
		default:
			m.Type, m.Error = Fail, "rejected: "+rep.Reason
		}
	}
	return m
}

// scan reads the task states of the service the worker leads (a new
// leader scans what really happened before it takes over:
// docs/background.md#exactly-once-effects); Value is how many tasks are not
// done.
func (w *worker) scan(ctx context.Context, req Request) Message {
	service, g, ok := w.leading()
	if !ok {
		return Message{Type: Fail, Error: "not leading"}
	}
	rep, err := w.reg.Scan(ctx, service)
	if err != nil {
		if register.IsDefinite(err) {
			return Message{Type: Fail, Error: err.Error()}
		}
		return Message{Type: Info, Error: err.Error()}
	}
	pending := int64(0)
	for _, st := range rep.Tasks {
		if st.State != register.TaskSucceeded {
			pending++
		}
	}
	return Message{Type: OK, Token: ptr(g.Token), Value: ptr(pending), CurrentToken: ptr(rep.Term)}
}
