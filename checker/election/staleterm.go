package election

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/resource/register"
)

// StaleTerm is an accepted task call whose term is below one the
// register had already accepted for the service.
type StaleTerm struct {
	Service string `json:"service"`
	Task    string `json:"task"`
	Op      string `json:"op"`
	Seq     int64  `json:"seq"`
	Process int    `json:"process"`
	Term    int64  `json:"term"`
	// ServiceTerm is the highest term accepted before, first accepted at
	// SetBySeq by SetByProcess.
	ServiceTerm  int64 `json:"service_term"`
	SetBySeq     int64 `json:"set_by_seq"`
	SetByProcess int   `json:"set_by_process"`
	// Entries are the entry that set the service term and the stale one.
	Entries []register.Entry `json:"entries"`
	Message string           `json:"message"`
}

// StaleTermDetails is the evidence of the stale-term checker.
type StaleTermDetails struct {
	TaskCalls         int `json:"task_calls"`
	AcceptedTaskCalls int `json:"accepted_task_calls"`
	// Untermed counts accepted calls without a term: not judged, and
	// they raise nothing.
	Untermed int `json:"untermed,omitempty"`
	// FencedOff counts the calls the register refused for a stale term:
	// fencing doing its job.
	FencedOff         int         `json:"fenced_off"`
	Violations        []StaleTerm `json:"violations"`
	ViolationCount    int         `json:"violation_count"`
	ViolationsOmitted int         `json:"violations_omitted,omitempty"`
	// FirstViolationSeq is the first stale call accepted (0: none);
	// FirstViolationAfterNS its commit after the run's start.
	FirstViolationSeq     int64  `json:"first_violation_seq,omitempty"`
	FirstViolationAfterNS *int64 `json:"first_violation_after_ns,omitempty"`
}

// CheckStaleTerm walks the apply log in commit order and finds accepted
// claims and completes whose term is below a term the register had
// already accepted for the same service: an old leader still acting on
// the resource after a newer one had. A fenced register refuses those
// ("stale term"); an unfenced one lets them through, and this is the
// evidence that a deposed leader reached the resource
// (docs/background.md#leader-election).
func CheckStaleTerm(ctx context.Context, in checker.Input) checker.Result {
	log := bySeq(in.ApplyLog)
	d := StaleTermDetails{Violations: []StaleTerm{}}
	top := map[string]register.Entry{} // per service, the entry that accepted the highest term
	limit := in.Limit()
	for i, e := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		if !isTaskCall(e) {
			continue
		}
		d.TaskCalls++
		if !e.Accepted {
			if e.Reason == "stale term" {
				d.FencedOff++
			}
			continue
		}
		d.AcceptedTaskCalls++
		if !e.HasToken {
			d.Untermed++
			continue
		}
		t, seen := top[e.Service]
		if !seen || e.Token > t.Token {
			top[e.Service] = e
			continue
		}
		if e.Token < t.Token {
			staleCall(in, &d, t, e, limit)
		}
	}
	switch {
	case d.ViolationCount > 0:
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("the register accepted %d task calls under a term older than one it had accepted; first: %s",
				d.ViolationCount, d.Violations[0].Message)}
	case d.AcceptedTaskCalls == d.Untermed:
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: "the apply log has no accepted task call with a term: the run exercised nothing, so nothing can be decided"}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

func staleCall(in checker.Input, d *StaleTermDetails, top, e register.Entry, limit int) {
	d.ViolationCount++
	if d.FirstViolationSeq == 0 {
		d.FirstViolationSeq = e.Seq
		d.FirstViolationAfterNS = afterStart(in, e)
	}
	if len(d.Violations) >= limit {
		d.ViolationsOmitted++
		return
	}
	d.Violations = append(d.Violations, StaleTerm{Service: e.Service, Task: taskOf(e), Op: e.Op, Seq: e.Seq, Process: e.Process,
		Term: e.Token, ServiceTerm: top.Token, SetBySeq: top.Seq, SetByProcess: top.Process, Entries: []register.Entry{top, e},
		Message: fmt.Sprintf("the register accepted %s of %s by process %d with term %d at seq %d, after it had accepted term %d (seq %d, process %d)",
			e.Op, taskOf(e), e.Process, e.Token, e.Seq, top.Token, top.Seq, top.Process)})
}
