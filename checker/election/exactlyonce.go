package election

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Violation kinds of the exactly-once checker.
const (
	// KindDuplicate: a task's effect ran more than once.
	KindDuplicate = "duplicate"
	// KindMissing: a task's effect never ran (it never succeeded).
	KindMissing = "missing"
)

// maxTaskEntries bounds the entries kept as evidence of one task.
const maxTaskEntries = 20

// TaskViolation is a task whose effect did not run exactly once.
type TaskViolation struct {
	Kind    string `json:"kind"`
	Service string `json:"service"`
	Task    string `json:"task"`
	// Executions is the judged count: the accepted completes, or the
	// register's own count when higher.
	Executions int `json:"executions"`
	// AcceptedCompletes counts the accepted complete entries;
	// RegisterExecutions is the executions field of the task's last entry.
	AcceptedCompletes  int `json:"accepted_completes"`
	RegisterExecutions int `json:"register_executions"`
	// Terms, Processes and Seqs are those of the accepted completes (a
	// duplicate) or of every call of the task (a missing one).
	Terms     []int64 `json:"terms"`
	Processes []int   `json:"processes"`
	Seqs      []int64 `json:"seqs"`
	// Entries are the apply-log lines (at most 20).
	Entries        []register.Entry `json:"entries"`
	EntriesOmitted int              `json:"entries_omitted,omitempty"`
	// ReportedDone is, for a missing task, the first complete a worker
	// answered ok although the register never ran it: a client that took
	// something other than the resource's word for success.
	ReportedDone *ReportedDone `json:"reported_done,omitempty"`
	Message      string        `json:"message"`
}

// ReportedDone is a complete answered ok: who, when, under which term.
type ReportedDone struct {
	Process int    `json:"process"`
	TimeNS  int64  `json:"time_ns"`
	Term    *int64 `json:"term,omitempty"`
}

// ExactlyOnceDetails is the evidence of the exactly-once checker.
type ExactlyOnceDetails struct {
	InitEntries int `json:"init_entries"`
	// Tasks is the number of tasks judged: those the init entries name,
	// and any other task the log shows a call of.
	Tasks int `json:"tasks"`
	// TasksFromCalls counts tasks known only from their calls (an init
	// entry named none).
	TasksFromCalls    int `json:"tasks_from_calls,omitempty"`
	ExecutedOnce      int `json:"executed_once"`
	AcceptedCompletes int `json:"accepted_completes"`
	// RefusedDone counts completes and claims refused because the task
	// was done already: idempotency at work.
	RefusedDone int `json:"refused_done"`
	// RepliesDropped counts task calls committed whose reply was dropped.
	RepliesDropped    int             `json:"replies_dropped"`
	Violations        []TaskViolation `json:"violations"`
	ViolationCounts   map[string]int  `json:"violation_counts"`
	ViolationsOmitted int             `json:"violations_omitted,omitempty"`
	// FirstViolationSeq is the accepted complete that first ran a task a
	// second time (0: none); FirstViolationAfterNS its commit after the
	// run's start. FirstViolationTimeNS is the earliest evidence on the
	// history's clock: the worker's ok for that second run, or a missing
	// task's ok that reported it done.
	FirstViolationSeq     int64  `json:"first_violation_seq,omitempty"`
	FirstViolationAfterNS *int64 `json:"first_violation_after_ns,omitempty"`
	FirstViolationTimeNS  *int64 `json:"first_violation_time_ns,omitempty"`
}

// taskLog is what the apply log says of one task.
type taskLog struct {
	id        taskID
	completes []register.Entry // accepted
	calls     []register.Entry
	lastExec  int
	named     bool // by an init entry
}

// CheckExactlyOnce judges the task table after healing: every task the
// controller created must have run its effect exactly once. Each
// accepted complete is one execution (with idempotency a second complete
// of a done task is refused, without it it runs again); the register's
// own count (executions after the task's last entry) is taken when
// higher, so that neither hides a duplicate. A task never completed is
// missing: its effect never happened. Without an init entry the task set
// is not known and the answer is unknown.
func CheckExactlyOnce(ctx context.Context, in checker.Input) checker.Result {
	return exactlyOnce(ctx, in, false)
}

// CheckExactlyOnceSoFar is exactly-once on the records of a run still
// going (checker.Checker's SoFar): a task run twice is final. A task not
// run yet is not missing while the run goes on, except one a worker
// already answered done: a correct worker answers a complete ok only
// after the register accepted it, and the apply log, read after the
// history, holds every entry the history's answers rest on. That one
// can still be taken back, by a leader that had picked the task before
// the answer and runs it later; the full check decides.
func CheckExactlyOnceSoFar(ctx context.Context, in checker.Input) checker.Result {
	return exactlyOnce(ctx, in, true)
}

// exactlyOnce is CheckExactlyOnce, or with soFar its rule on a run still
// going.
func exactlyOnce(ctx context.Context, in checker.Input, soFar bool) checker.Result {
	log := bySeq(in.ApplyLog)
	d := ExactlyOnceDetails{Violations: []TaskViolation{}, ViolationCounts: map[string]int{KindDuplicate: 0, KindMissing: 0}}
	tasks, order := map[taskID]*taskLog{}, []taskID{}
	get := func(id taskID) *taskLog {
		t, ok := tasks[id]
		if !ok {
			t = &taskLog{id: id}
			tasks[id] = t
			order = append(order, id)
		}
		return t
	}
	for i, e := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		switch {
		case e.Op == opInit:
			d.InitEntries++
			nameTasks(e, get)
		case isTaskCall(e):
			countCall(&d, get(taskID{e.Service, taskOf(e)}), e)
		}
	}
	if d.InitEntries == 0 {
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: "the apply log has no init entry: the task table was never created (or its log is missing), so the tasks to judge are not known"}
	}
	judgeTasks(in, &d, tasks, order, soFar)
	n := d.ViolationCounts[KindDuplicate] + d.ViolationCounts[KindMissing]
	if n == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d of %d tasks did not run exactly once (%d more than once, %d never); first: %s",
			n, d.Tasks, d.ViolationCounts[KindDuplicate], d.ViolationCounts[KindMissing], d.Violations[0].Message)}
}

// nameTasks marks the tasks an init entry names as to be judged: the
// register's lists them in Tasks (the whole table, or a chunk the
// workload added as the run went on: a table grown by several inits is
// judged whole), an entry of one task names it in Task or Key. A task
// named again is still one task.
func nameTasks(e register.Entry, get func(taskID) *taskLog) {
	for _, t := range e.Tasks {
		if t != "" {
			get(taskID{e.Service, t}).named = true
		}
	}
	if t := taskOf(e); t != "" {
		get(taskID{e.Service, t}).named = true
	}
}

func countCall(d *ExactlyOnceDetails, t *taskLog, e register.Entry) {
	t.calls = append(t.calls, e)
	t.lastExec = int(e.Executions)
	if e.ReplyDropped {
		d.RepliesDropped++
	}
	switch {
	case e.Accepted && e.Op == opComplete:
		d.AcceptedCompletes++
		t.completes = append(t.completes, e)
	case !e.Accepted && e.Reason == "done":
		d.RefusedDone++
	}
}

// judgeTasks records every task that did not run exactly once, in the
// order the log first names them; the first violation is the earliest
// second execution. With soFar (a run still going) a task not run is
// judged only when a worker reported it done.
func judgeTasks(in checker.Input, d *ExactlyOnceDetails, tasks map[taskID]*taskLog, order []taskID, soFar bool) {
	limit := in.Limit()
	d.Tasks = len(order)
	done := reportedDone(in.History)
	for _, id := range order {
		t := tasks[id]
		if !t.named {
			d.TasksFromCalls++
		}
		v, ok := taskViolation(t)
		if !ok {
			d.ExecutedOnce++
			continue
		}
		r, reported := done[t.id.task]
		if v.Kind == KindMissing && soFar && !reported {
			continue // not run yet: the run goes on
		}
		d.ViolationCounts[v.Kind]++
		if v.Kind == KindMissing && reported {
			v.ReportedDone = &r
			v.Message += fmt.Sprintf("; process %d reported it done at %s", r.Process, checker.Seconds(r.TimeNS))
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, r.TimeNS)
		}
		if len(t.completes) > 1 && (d.FirstViolationSeq == 0 || t.completes[1].Seq < d.FirstViolationSeq) {
			d.FirstViolationSeq = t.completes[1].Seq
			d.FirstViolationAfterNS = afterStart(in, t.completes[1])
			if at := completeOK(in.History, t.completes[1]); at != nil {
				d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, *at)
			}
		}
		checker.Keep(&d.Violations, &d.ViolationsOmitted, v, limit)
	}
}

// taskViolation judges one task; false when it ran exactly once.
func taskViolation(t *taskLog) (TaskViolation, bool) {
	n := max(len(t.completes), t.lastExec)
	if n == 1 {
		return TaskViolation{}, false
	}
	v := TaskViolation{Kind: KindDuplicate, Service: t.id.service, Task: t.id.task, Executions: n,
		AcceptedCompletes: len(t.completes), RegisterExecutions: t.lastExec}
	ev := t.completes
	if n == 0 {
		v.Kind, ev = KindMissing, t.calls
	}
	for _, e := range ev {
		v.Terms = append(v.Terms, e.Token)
		v.Processes = append(v.Processes, e.Process)
		v.Seqs = append(v.Seqs, e.Seq)
		if len(v.Entries) < maxTaskEntries {
			v.Entries = append(v.Entries, e)
		} else {
			v.EntriesOmitted++
		}
	}
	if v.Kind == KindMissing {
		v.Message = fmt.Sprintf("task %s of %s never ran: no complete was accepted (%d calls in the log)", v.Task, v.Service, len(t.calls))
	} else {
		v.Message = fmt.Sprintf("task %s of %s ran %d times: accepted completes at seqs %v by processes %v with terms %v (register count %d)",
			v.Task, v.Service, n, v.Seqs, v.Processes, v.Terms, t.lastExec)
	}
	return v, true
}

// reportedDone finds, for each task, the first complete of it answered
// ok in the history: one pass, however many tasks are judged.
func reportedDone(h []history.Event) map[string]ReportedDone {
	out := map[string]ReportedDone{}
	for _, x := range h {
		if x.F != history.FComplete || x.Type != history.OK {
			continue
		}
		if _, seen := out[x.Key]; seen {
			continue
		}
		r := ReportedDone{Process: int(x.Process), TimeNS: x.Time}
		if x.Value != nil && x.Value.Token != nil {
			r.Term = history.Int64(*x.Value.Token)
		}
		out[x.Key] = r
	}
	return out
}
