package election

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/stream"
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
// (docs/background.md#leader-election). It is a StaleTermStream fed the
// whole log.
func CheckStaleTerm(ctx context.Context, in checker.Input) checker.Result {
	log := bySeq(in.ApplyLog)
	s := NewStaleTermStream(in.Limit(), in.StartWall)
	for i := range log {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		s.Add(&log[i])
	}
	return s.Result()
}

// StaleTermStream is stale-term's rule fed the apply log one entry at a
// time in commit order, the one implementation of it: CheckStaleTerm
// feeds it the whole log, and a run's online check (observe/progress)
// the log as the register appends it, so a run can stop at the first
// stale call accepted. An accepted call is judged against the entries
// before it only, so its verdict is final when it is added. Memory: per
// service, the entry that accepted its highest term, and the first limit
// violations (the counts stay exact).
type StaleTermStream struct {
	limit     int
	startWall int64
	top       map[string]register.Entry
	d         StaleTermDetails
}

var _ stream.Checker[*register.Entry, StaleTerm] = (*StaleTermStream)(nil)

// NewStaleTermStream keeps the first limit violations as evidence, and
// places entries on the run's clock by its start (Unix ns; 0: unknown).
func NewStaleTermStream(limit int, startWall int64) *StaleTermStream {
	return &StaleTermStream{limit: limit, startWall: startWall, top: map[string]register.Entry{},
		d: StaleTermDetails{Violations: []StaleTerm{}}}
}

// Name implements stream.Checker.
func (s *StaleTermStream) Name() string { return NameStaleTerm }

// Add judges the next entry (stream.Checker): the stale call it is, if
// it is one.
func (s *StaleTermStream) Add(e *register.Entry) []StaleTerm {
	if !isTaskCall(*e) {
		return nil
	}
	s.d.TaskCalls++
	if !e.Accepted {
		if e.Reason == "stale term" {
			s.d.FencedOff++
		}
		return nil
	}
	s.d.AcceptedTaskCalls++
	if !e.HasToken {
		s.d.Untermed++
		return nil
	}
	t, seen := s.top[e.Service]
	if !seen || e.Token > t.Token {
		s.top[e.Service] = *e
		return nil
	}
	if e.Token == t.Token {
		return nil
	}
	return []StaleTerm{s.stale(t, *e)}
}

// stale counts the stale call e, accepted after top, and keeps it while
// the evidence has room.
func (s *StaleTermStream) stale(top, e register.Entry) StaleTerm {
	d := &s.d
	d.ViolationCount++
	if d.FirstViolationSeq == 0 {
		d.FirstViolationSeq = e.Seq
		d.FirstViolationAfterNS = afterWall(s.startWall, e)
	}
	v := StaleTerm{Service: e.Service, Task: taskOf(e), Op: e.Op, Seq: e.Seq, Process: e.Process,
		Term: e.Token, ServiceTerm: top.Token, SetBySeq: top.Seq, SetByProcess: top.Process, Entries: []register.Entry{top, e},
		Message: fmt.Sprintf("the register accepted %s of %s by process %d with term %d at seq %d, after it had accepted term %d (seq %d, process %d)",
			e.Op, taskOf(e), e.Process, e.Token, e.Seq, top.Token, top.Seq, top.Process)}
	checker.Keep(&d.Violations, &d.ViolationsOmitted, v, s.limit)
	return v
}

// Result is the verdict on the entries added so far.
func (s *StaleTermStream) Result() checker.Result {
	d := s.d
	switch {
	case d.ViolationCount > 0:
		first := "(not kept)"
		if len(d.Violations) > 0 {
			first = d.Violations[0].Message
		}
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("the register accepted %d task calls under a term older than one it had accepted; first: %s",
				d.ViolationCount, first)}
	case d.AcceptedTaskCalls == d.Untermed:
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: "the apply log has no accepted task call with a term: the run exercised nothing, so nothing can be decided"}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}
