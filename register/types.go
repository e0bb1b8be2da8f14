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
//	        grant, the seed's SQL "fencing_token < :token").
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
	// The task table's fields (election workload; op "init", "claim" or
	// "complete"), left out of lock entries. The term presented is in
	// Token/HasToken.
	Service string `json:"service,omitempty"`
	Task    string `json:"task,omitempty"`
	// Result is the result id stored with (or by) the task.
	Result string `json:"result,omitempty"`
	// StateAfter is the task's state after the entry (PENDING, RUNNING,
	// SUCCEEDED, FAILED).
	StateAfter string `json:"state_after,omitempty"`
	// Executions is how many times the task's effect ran, after the entry.
	Executions int `json:"executions,omitempty"`
	// ReplyDropped: the entry was committed and its reply dropped (the
	// lost-reply fault).
	ReplyDropped bool `json:"reply_dropped,omitempty"`
}

// Ops of Entry.
const (
	OpWrite = "write"
	OpRead  = "read"
)
