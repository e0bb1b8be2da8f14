// Package register is the fenced register: the external resource that the
// lock protects, run as its own process (chaos register) with an HTTP API
// and an fsync'd, append-only apply log that is the ground truth for what
// the resource really did.
//
// Semantics per key: Value (int64, initially 0), Token (token of the last
// accepted write), Fence (the highest token presented by any accepted read
// or write; -1 before any). Modes:
//
//	off:    every read and write is accepted.
//	on:     a read or write with token t is accepted iff t >= Fence. A holder
//	        may write several times under one grant.
//	strict: as on, and a write must also have t > Token (one write per
//	        grant, as the textbook SQL "fencing_token < :token" of
//	        docs/background.md#why-a-lock-needs-a-fence).
//
// Reads with a token raise the fence. Without that, fencing cannot stop a
// lost update: A (token 100) reads 5 and pauses; B (101) acquires and reads
// 5; A wakes and writes 6 with 100, accepted because nothing higher was
// written yet; B writes 6 with 101. B's read must already have fenced A
// off, as a storage server does when it remembers the highest token it has
// seen (Kleppmann's fencing). A read without a token (the controller's
// final read) is accepted and raises nothing.
package register

// Modes of the register.
const (
	ModeOff    = "off"
	ModeOn     = "on"
	ModeStrict = "strict"
)

// NoToken is the Fence and Token of a key nothing has been written to.
const NoToken int64 = -1

// MaxTaskRetries is how many times a worker may send a claim or complete
// again, under the same term, after its reply was lost (a timeout, a
// reset), as a real client retries a call that timed out: with
// idempotency the retry finds the stored result, without it the task runs
// again. The integrity check attributes up to this many copies of a task
// call to the one invocation that asked for it.
const MaxTaskRetries = 3

// WriteRequest is the body of POST /write.
type WriteRequest struct {
	Key     string `json:"key"`
	Value   int64  `json:"value"`
	Token   *int64 `json:"token,omitempty"`
	Process int    `json:"process"`
	PID     int    `json:"pid,omitempty"`
}

// ReadRequest is the body of POST /read (POST because a fenced read moves
// the fence).
type ReadRequest struct {
	Key     string `json:"key"`
	Token   *int64 `json:"token,omitempty"`
	Process int    `json:"process"`
	PID     int    `json:"pid,omitempty"`
}

// Reply answers both: whether the register accepted, and the key's state
// after the operation (for a read: the value read).
type Reply struct {
	Accepted bool   `json:"accepted"`
	Value    int64  `json:"value"`
	Token    int64  `json:"token"`
	Fence    int64  `json:"fence"`
	Reason   string `json:"reason,omitempty"`
	Seq      int64  `json:"seq"`
}

// Entry is one line of the apply log, in the register's commit order.
type Entry struct {
	// Seq is the commit order, from 1, without gaps.
	Seq int64 `json:"seq"`
	// Wall is the register's wall clock (Unix ns) at commit; it is for the
	// report only, never for ordering (Seq orders).
	Wall int64  `json:"wall"`
	Op   string `json:"op"` // "write" or "read"
	Key  string `json:"key"`
	// Token presented; HasToken false means none was.
	Token    int64 `json:"token"`
	HasToken bool  `json:"has_token"`
	// Value written (write) or returned (read).
	Value    int64  `json:"value"`
	Process  int    `json:"process"`
	PID      int    `json:"pid,omitempty"`
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
	// The key's state before this entry.
	PrevValue int64  `json:"prev_value"`
	PrevToken int64  `json:"prev_token"`
	PrevFence int64  `json:"prev_fence"`
	Mode      string `json:"mode"`

	// The task table's fields (ops init, claim, complete). All omitempty,
	// so a lock entry is byte for byte what it was before tasks existed.
	// A task entry presents its term in Token/HasToken and leaves Key,
	// Value and Prev* at zero; Mode is the register's fencing mode.
	Service string `json:"service,omitempty"`
	Task    string `json:"task,omitempty"`
	// Tasks is what an init presented (new ones become PENDING).
	Tasks []string `json:"tasks,omitempty"`
	// Result, StateAfter and Executions are the task's state after the
	// entry (for an accepted complete, Result is the one presented; for a
	// complete refused as "done", the stored one the caller reuses).
	Result     string `json:"result,omitempty"`
	StateAfter string `json:"state_after,omitempty"`
	Executions int64  `json:"executions,omitempty"`
	// Idempotency is the register's idempotency mode (IdempotencyOn/Off):
	// with Mode, what DecideTask needs to re-check the entry.
	Idempotency string `json:"idempotency,omitempty"`
	// ReplyDropped: the entry is committed, and then the lost-reply fault
	// closed the connection without answering; the caller saw an error of
	// unknown outcome.
	ReplyDropped bool `json:"reply_dropped,omitempty"`
	// Request is the request id of an entry of the PostgreSQL resource
	// (pgfence): the id a retry presents again, which its unique
	// constraint answers from this entry instead of applying it twice.
	// The register writes none.
	Request string `json:"request,omitempty"`
}

// Ops of Entry.
const (
	OpWrite = "write"
	OpRead  = "read"
	// The task table's ops. A scan is not logged: it changes nothing.
	OpInit     = "init"
	OpClaim    = "claim"
	OpComplete = "complete"
)

// The task table (election workload). Per service the register keeps Term,
// the highest term accepted so far (NoToken before any), and per task its
// TaskState. Fencing for tasks follows the register's mode: on and strict
// both refuse a call whose term is below Term ("stale term"); off refuses
// none. Idempotency (IdempotencyOn/Off) says whether a task that already
// SUCCEEDED is protected from running again: on, a second claim or
// complete is refused as "done" and answered with the stored result; off,
// every accepted complete executes the task's effect once more. The rule
// is DecideTask.

// Idempotency modes of the task table.
const (
	IdempotencyOn  = "on"
	IdempotencyOff = "off"
)

// Task states.
const (
	TaskPending   = "PENDING"
	TaskRunning   = "RUNNING"
	TaskSucceeded = "SUCCEEDED"
	// TaskFailed is part of the format; no call of this register sets it
	// yet.
	TaskFailed = "FAILED"
)

// Reasons of refused task calls, exactly as in Entry.Reason and
// TaskReply.Reason (checkers match them).
const (
	ReasonStaleTerm   = "stale term"
	ReasonDone        = "done"
	ReasonUnknownTask = "unknown task"
)

// InitRequest is the body of POST /tasks/init: the controller creates the
// service's table before any worker starts. Tasks already in the table are
// left as they are, so a retried init changes nothing.
type InitRequest struct {
	Service string   `json:"service"`
	Tasks   []string `json:"tasks"`
}

// InitReply answers POST /tasks/init.
type InitReply struct {
	// Added is how many of the tasks were new; Tasks is the table's size
	// after.
	Added int   `json:"added"`
	Tasks int   `json:"tasks"`
	Seq   int64 `json:"seq"`
}

// TaskRequest is the body of POST /task/claim and POST /task/complete.
// Term is the leader's term (its election node's czxid), never negative.
// Result is the result id of a complete and must be empty on a claim.
type TaskRequest struct {
	Service string `json:"service"`
	Task    string `json:"task"`
	Term    int64  `json:"term"`
	Process int    `json:"process"`
	PID     int    `json:"pid,omitempty"`
	Result  string `json:"result,omitempty"`
}

// TaskReply answers a claim or complete. A refused call is not an error:
// Accepted is false and Reason says why (ReasonStaleTerm, ReasonDone,
// ReasonUnknownTask). State, Result and Executions are the task's after
// the call, Term the service's.
type TaskReply struct {
	Accepted   bool   `json:"accepted"`
	Reason     string `json:"reason,omitempty"`
	State      string `json:"state"`
	Term       int64  `json:"term"`
	Result     string `json:"result,omitempty"`
	Executions int64  `json:"executions"`
	Seq        int64  `json:"seq"`
}

// ScanRequest is the body of POST /task/scan.
type ScanRequest struct {
	Service string `json:"service"`
}

// ScanReply is every task of a service (empty for a service never
// initialised, with Term NoToken). Seq is the last committed entry.
type ScanReply struct {
	Service string               `json:"service"`
	Term    int64                `json:"term"`
	Tasks   map[string]TaskState `json:"tasks"`
	Seq     int64                `json:"seq"`
}

// LostReplyRequest is the body (and the reply) of POST /faults/lost-reply:
// while Share > 0, that share of claims and completes is committed and
// then answered by closing the connection. 0 turns the fault off.
type LostReplyRequest struct {
	Share float64 `json:"share"`
}

// TaskState is one task in the table.
type TaskState struct {
	State string `json:"state"`
	// Owner is the term of the last accepted claim or complete (NoToken
	// before any).
	Owner int64 `json:"owner"`
	// Result is the result id stored by the last accepted complete.
	Result string `json:"result,omitempty"`
	// Executions counts accepted completes that executed the task's
	// effect: exactly-once means 1 at the end.
	Executions int64 `json:"executions"`
}

// ServiceState is one service's task table.
type ServiceState struct {
	// Term is the highest term accepted so far (NoToken before any).
	Term  int64                `json:"term"`
	Tasks map[string]TaskState `json:"tasks"`
}
