package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/recipes"
	"github.com/zkchaos/zkchaos/register"
)

// The election workload's worker side (docs/worker-protocol.md,
// "Election"): a candidate campaigns by taking the service's lock under
// recipes.ElectionRoot with the run's recipe (seed 14: the smallest ephemeral
// sequential node leads, each candidate watches its predecessor, the term
// is the node's czxid, and the seed confirms its node's ephemeralOwner is
// its own session before it acts); as leader it claims and completes tasks
// in the register's task table under its term. A lost leadership is a
// demoted event.

// taskRetries is how many times a task call whose reply was lost is sent
// again, as a real client retries a call that timed out: with idempotency
// the retry finds the stored result, without it the task runs again.
const taskRetries = 3

func (w *worker) newElectionSubject(rc recipes.Config) error {
	rc.Root = recipes.ElectionRoot
	if err := w.newLockSubject(rc, w.electionMessage); err != nil {
		return err
	}
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

// taskCall claims or completes task Key under the worker's term. A
// complete spends WorkMS on the task's work first, without checking its
// leadership again (the window a pause turns stale), and presents a
// result id. A call whose reply was lost is retried up to taskRetries
// times; the answer is the last reply's.
func (w *worker) taskCall(ctx context.Context, req Request) Message {
	service, g, ok := w.leading()
	if !ok {
		return Message{Type: Fail, Error: "not leading"}
	}
	if req.Key == "" {
		return Message{Type: Fail, Error: req.F + ": missing key (the task)"}
	}
	tr := register.TaskRequest{Service: service, Task: req.Key, Term: g.Token, Process: w.cfg.Process, PID: w.pid}
	call := w.reg.Claim
	if req.F == "complete" {
		tr.Result = fmt.Sprintf("r-%d-%s", g.Token, req.Key)
		call = w.reg.Complete
		if req.WorkMS > 0 && !ctxsleep.Sleep(ctx, time.Duration(req.WorkMS)*time.Millisecond) {
			return Message{Type: Fail, Token: ptr(g.Token), Error: "complete: cancelled during work: " + ctx.Err().Error()}
		}
	}
	var rep register.TaskReply
	var err error
	for try := 0; try <= taskRetries; try++ {
		rep, err = call(ctx, tr)
		if err == nil || register.IsDefinite(err) || ctx.Err() != nil {
			break
		}
		w.log.Warn("task call: reply lost, retrying", "f", req.F, "task", req.Key, "try", try+1, "err", err)
	}
	return taskReply(rep, err, g.Token)
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

// scan reads the task states of the service the worker leads (seed 17: a
// new leader scans before it takes over); Value is how many tasks are not
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
