package register

import (
	"fmt"
	"maps"
)

// TaskInput is what DecideTask decides on: the register's modes, the
// service's and the task's state before the call, and the call.
type TaskInput struct {
	// Mode is the register's fencing mode (on and strict fence tasks).
	Mode       string
	Idempotent bool
	// ServiceTerm is the service's Term before the call.
	ServiceTerm int64
	// Task is the task's state before; Known false means the table has no
	// such task (Task is then ignored).
	Task  TaskState
	Known bool
	Op    string // OpClaim or OpComplete
	Term  int64  // the term presented
	// Result is the result id a complete presents.
	Result string
}

// TaskDecision is DecideTask's answer: whether the call is accepted, why
// not, and the service's term and the task's state after it.
type TaskDecision struct {
	Accepted bool
	Reason   string
	Term     int64
	Task     TaskState
}

// DecideTask is the task table's accept rule, the one place it is written:
// the register applies it to every claim and complete, Replay re-applies it
// to every logged one (and refuses a log that disagrees), and the election
// checkers can use it to re-check the apply log. It is pure.
//
// In order: an unknown task is refused and changes nothing. With fencing
// (mode on or strict) a term below the service's Term is refused as
// ReasonStaleTerm. Any other call raises Term to its term, in every mode
// (the register remembers the highest term it has seen, as it remembers
// the highest token). With idempotency, a task that SUCCEEDED is refused
// as ReasonDone and keeps its stored result, which the caller reuses.
// Otherwise a claim makes the task RUNNING under the term, and a complete
// makes it SUCCEEDED, stores the result and counts one more execution of
// the task's effect — without idempotency also when it had SUCCEEDED
// already, which is the duplicate the election workload looks for.
func DecideTask(in TaskInput) TaskDecision {
	d := TaskDecision{Term: in.ServiceTerm, Task: in.Task}
	if !in.Known {
		d.Task = TaskState{}
		d.Reason = ReasonUnknownTask
		return d
	}
	if in.Mode != ModeOff && in.Term < in.ServiceTerm {
		d.Reason = ReasonStaleTerm
		return d
	}
	d.Term = max(in.ServiceTerm, in.Term)
	if in.Idempotent && in.Task.State == TaskSucceeded {
		d.Reason = ReasonDone
		return d
	}
	d.Accepted = true
	d.Task.Owner = in.Term
	if in.Op == OpClaim {
		d.Task.State = TaskRunning
		return d
	}
	d.Task.State = TaskSucceeded
	d.Task.Result = in.Result
	d.Task.Executions++
	return d
}

// newTask is a task as init creates it.
var newTask = TaskState{State: TaskPending, Owner: NoToken}

// newService is a service before its init.
func newService() ServiceState {
	return ServiceState{Term: NoToken, Tasks: map[string]TaskState{}}
}

// taskStep is what one task entry does to its service's table.
type taskStep struct {
	term  int64
	tasks map[string]TaskState // the tasks whose state changes
}

// stepTaskEntry is the one place that says how a task entry changes a
// service's table, shared by the live register (before it logs the entry)
// and Replay. A claim or complete is decided again with DecideTask, and an
// entry whose logged outcome differs is an error: the log was edited or
// written by a register with another rule. svc is not modified.
func stepTaskEntry(svc ServiceState, e Entry) (taskStep, error) {
	if e.Service == "" {
		return taskStep{}, fmt.Errorf("%s entry without a service", e.Op)
	}
	step := taskStep{term: svc.Term, tasks: map[string]TaskState{}}
	if e.Op == OpInit {
		for _, t := range e.Tasks {
			if _, ok := svc.Tasks[t]; !ok && t != "" {
				step.tasks[t] = newTask
			}
		}
		return step, nil
	}
	if !e.HasToken {
		return taskStep{}, fmt.Errorf("%s entry without a term", e.Op)
	}
	idem, err := idempotent(e.Idempotency)
	if err != nil {
		return taskStep{}, err
	}
	task, known := svc.Tasks[e.Task]
	d := DecideTask(TaskInput{Mode: e.Mode, Idempotent: idem, ServiceTerm: svc.Term,
		Task: task, Known: known, Op: e.Op, Term: e.Token, Result: e.Result})
	if d.Accepted != e.Accepted || d.Reason != e.Reason || d.Task.State != e.StateAfter ||
		d.Task.Result != e.Result || d.Task.Executions != e.Executions {
		return taskStep{}, fmt.Errorf("%s %s/%s term %d: logged accepted=%v reason=%q state=%q result=%q executions=%d, rule says accepted=%v reason=%q state=%q result=%q executions=%d",
			e.Op, e.Service, e.Task, e.Token, e.Accepted, e.Reason, e.StateAfter, e.Result, e.Executions,
			d.Accepted, d.Reason, d.Task.State, d.Task.Result, d.Task.Executions)
	}
	step.term = d.Term
	if known {
		step.tasks[e.Task] = d.Task
	}
	return step, nil
}

// apply returns svc with step done; svc's map is modified in place.
func (svc ServiceState) apply(step taskStep) ServiceState {
	if svc.Tasks == nil {
		svc.Tasks = map[string]TaskState{}
	}
	svc.Term = step.term
	maps.Copy(svc.Tasks, step.tasks)
	return svc
}

// idempotent parses an idempotency mode.
func idempotent(mode string) (bool, error) {
	switch mode {
	case IdempotencyOn:
		return true, nil
	case IdempotencyOff:
		return false, nil
	}
	return false, fmt.Errorf("unknown idempotency mode %q (want on or off)", mode)
}

// isTaskOp reports whether op belongs to the task table.
func isTaskOp(op string) bool {
	return op == OpInit || op == OpClaim || op == OpComplete
}

// copyService is a deep copy, for answers that leave the critical section.
func copyService(svc ServiceState) ServiceState {
	return ServiceState{Term: svc.Term, Tasks: maps.Clone(svc.Tasks)}
}
