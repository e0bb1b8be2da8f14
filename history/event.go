// Package history holds the run's record of operations, in Jepsen's model:
// every operation is an invocation followed by a completion of type ok
// (it happened), fail (it certainly did not happen) or info (unknown: it may
// take effect at any time after its invocation, or never).
//
// The history is the only thing the checkers trust besides the register's
// apply log, so it is written as the run goes (see Writer) and read back
// tolerantly (see Read): a run killed half-way still leaves a history that
// can be checked.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Type is the kind of an event: an invocation or one of three completions.
type Type string

// The four event types of Jepsen's model.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// Valid reports whether t is one of the four event types.
func (t Type) Valid() bool {
	switch t {
	case Invoke, OK, Fail, Info:
		return true
	}
	return false
}

// Operation names recorded for the lock workload and the nemesis.
const (
	FAcquire = "acquire"
	FRelease = "release"
	FRead    = "read"
	FWrite   = "write"
	// FLost is recorded (invoke and ok at the same instant) when the recipe
	// itself learns that it no longer holds a lock.
	FLost = "lost"
	// FSession is a session state change reported by a worker (connected,
	// disconnected, expired), recorded as an instant operation.
	FSession = "session"
	// FLate records a response that a retired process sent after its
	// operation had already been completed as info. The exact checker
	// ignores it; the linearizability checkers take it as the real
	// completion of that info operation (it only narrows what was unknown).
	FLate = "late"
	// FFinalRead is a key's value read from the register after every fault
	// was undone and the ensemble serves again: what the run ended with.
	FFinalRead = "final-read"
)

// Operation names of the config workload (docs/worker-protocol.md,
// "Config"): an admin reads the config and updates it by compare-and-set;
// a client watches it and reports every version it applied.
const (
	// FUpdate is an admin's compare-and-set of the config node, based on
	// the version it read (Value.Expected); ok carries the new Version and
	// Digest, fail a version mismatch (nothing written).
	FUpdate = "update"
	// FReadConfig is an admin's read of the config: Version and Digest.
	FReadConfig = "read-config"
	// FWatch starts a client watching the config; ok carries the first
	// version it applied.
	FWatch = "watch"
	// FApplied is recorded (invoke and ok at the same instant) when a
	// client reports that it applied a version of the config.
	FApplied = "applied"
)

// Operation names of the election workload (docs/background.md#leader-election): candidates campaign for leadership of a service, and the
// leader claims and completes tasks in the register's task table, which
// fences them by the leader's term.
const (
	// FCampaign is a candidate's campaign: ok (Token: term, Node, Session)
	// means the process leads from then on, until it resigns, is demoted or
	// is retired.
	FCampaign = "campaign"
	// FDemoted is recorded (invoke and ok at the same instant) when a
	// leader learns it no longer leads: Token is its term, State the
	// reason (expired, session-changed, closed, deleted).
	FDemoted = "demoted"
	// FResign is a leader giving up leadership.
	FResign = "resign"
	// FClaim is a leader claiming a task (Key) under its term (Token); the
	// completion carries the register's reply: Current is the service's
	// term after, State the task's state after, Digest its result id. ok
	// when accepted, fail when refused definitely (Error is the reason),
	// info when the reply was lost.
	FClaim = "claim"
	// FComplete is a leader completing a task: as FClaim, and the
	// invocation's Digest holds the result id it presents.
	FComplete = "complete"
	// FScan is a new leader's scan of the task table before it takes over;
	// ok's N is the number of tasks not SUCCEEDED.
	FScan = "scan"
)

// Process identifies a logical process. Workers are numbered from 0; a
// process that completed an operation with info is retired and its
// successor gets a fresh number. Nemesis is the nemesis.
type Process int

// Nemesis is the process of every nemesis operation, written as "nemesis".
const Nemesis Process = -1

// MarshalJSON writes workers as numbers and the nemesis as "nemesis".
func (p Process) MarshalJSON() ([]byte, error) {
	if p == Nemesis {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// UnmarshalJSON accepts a non-negative integer or the string "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = Nemesis
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("process must be a non-negative integer or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

func (p Process) String() string {
	if p == Nemesis {
		return "nemesis"
	}
	return strconv.Itoa(int(p))
}

// Value carries the arguments and results of an operation. It is one flat
// struct rather than a per-operation type so that the checkers can read
// millions of events without a second decoding pass; which fields are set
// depends on F and Type:
//
//	acquire ok:      Token, Node, Session
//	read ok:         N (value read), Token (the register's token for the key)
//	write invoke:    N (value to write)
//	write ok/fail:   N, Token (the token the worker wrote with), Current (the
//	                 register's token when it rejected the write)
//	release:         Token, Node
//	lost:            Token, Node, State (why: "expired", "session-changed", ...)
//	session:         State, Session (and Protocol, from a worker's hello)
//	pause/resume:    PID, Target, Verified
//	campaign ok:     Token (term), Node, Session
//	demoted:         Token (term), State (reason)
//	claim/complete:  Token (term presented); complete invoke: Digest (result
//	                 id); completions: Current (service term after), State
//	                 (task state after), Digest (result id)
//	scan ok:         N (tasks not SUCCEEDED)
type Value struct {
	Token   *int64 `json:"token,omitempty"`
	N       *int64 `json:"n,omitempty"`
	Current *int64 `json:"current_token,omitempty"`
	Node    string `json:"node,omitempty"`
	Session string `json:"session,omitempty"`
	State   string `json:"state,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Target  string `json:"target,omitempty"`
	// TargetProcess is the logical worker process a nemesis operation
	// acted on (client-side faults, session observations); nil for faults
	// of the ensemble.
	TargetProcess *int `json:"target_process,omitempty"`
	// LastSeenNS, on a session-gone observation (FSessionGone), is the
	// last run-clock time the session was seen alive on the servers (or,
	// for a session closed by the nemesis, when the close was sent): the
	// session ended after it and before the observation itself.
	LastSeenNS *int64 `json:"last_seen_ns,omitempty"`
	Verified   *bool  `json:"verified,omitempty"`
	// Of names the original operation of a late response (F == FLate).
	Of string `json:"of,omitempty"`
	// Detail is free text for the report (e.g. how a fault was verified).
	Detail string `json:"detail,omitempty"`
	// Wakeups, on an acquire completion, is how many times a watch
	// notification woke that acquire's wait (docs/worker-protocol.md,
	// "wake-ups"), for the herd checker.
	Wakeups *int64 `json:"wakeups,omitempty"`
	// Version is the config workload's znode version: the one an update
	// produced, a read saw, or a client applied.
	Version *int64 `json:"version,omitempty"`
	// Digest identifies the config data of Version (see
	// docs/worker-protocol.md, "Config"): a client's applied (version,
	// digest) pair must be one an admin wrote.
	Digest string `json:"digest,omitempty"`
	// Expected is the version an update was based on: what the admin
	// read before it, which a correct compare-and-set passes to setData as
	// the expected version.
	Expected *int64 `json:"expected_version,omitempty"`
	// Protocol, on the connected session a worker's hello is recorded
	// as, is the protocol version its hello named (0: none).
	Protocol int `json:"protocol,omitempty"`
}

// Event is one line of history.jsonl.
type Event struct {
	// Index is the position in the history, from 0, without gaps.
	Index int64 `json:"index"`
	// Time is nanoseconds since the run started, on one monotonic clock.
	Time    int64   `json:"time"`
	Process Process `json:"process"`
	Type    Type    `json:"type"`
	F       string  `json:"f"`
	Key     string  `json:"key"`
	Value   *Value  `json:"value"`
	Error   string  `json:"error"`
}

// Int64 returns a pointer to v, for the optional fields of Value.
func Int64(v int64) *int64 { return &v }

// Int returns a pointer to v, for the optional fields of Value.
func Int(v int) *int { return &v }

// Bool returns a pointer to v, for the optional fields of Value.
func Bool(v bool) *bool { return &v }

// Marshal encodes e as one JSON line without the trailing newline.
func (e *Event) Marshal() ([]byte, error) { return json.Marshal(e) }
