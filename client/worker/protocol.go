// Package worker is the worker side and the controller side of the worker
// protocol: one JSON object per line, requests on the worker's stdin,
// responses and unsolicited events on its stdout (Maelstrom's idea). Any
// executable that speaks it can be a subject; docs/worker-protocol.md is
// the user's description of the same contract.
package worker

// Request is one line the controller writes to a worker's stdin.
type Request struct {
	// ID is unique per worker process and echoed by the response.
	ID int64 `json:"id"`
	// F is acquire, release, read or write.
	F   string `json:"f"`
	Key string `json:"key,omitempty"`
	// Value is the register value to write (write only).
	Value *int64 `json:"value,omitempty"`
	// TimeoutMS bounds how long acquire may wait for the lock; on timeout
	// the worker removes its queue node and answers fail.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// WorkMS (write only) is the time the holder spends on its protected work
	// after it has checked that it holds the lock and before it writes to the
	// register, without checking again: that is what application code does
	// (check, compute, write), and a GC pause that lands in this window is the
	// one of docs/background.md#why-a-lock-needs-a-fence, after which the
	// worker writes with a token that is no longer the newest.
	WorkMS int64 `json:"work_ms,omitempty"`
	// ExpectedVersion (update only, config workload) is the config
	// version the admin read; a correct compare-and-set passes it to
	// setData.
	ExpectedVersion *int64 `json:"expected_version,omitempty"`
}

// Response types.
const (
	OK   = "ok"
	Fail = "fail"
	Info = "info"
)

// Events a worker reports without being asked.
const (
	// EventHello is the first line a worker writes, once it has a session.
	EventHello = "hello"
	// EventSession reports a session state change (State, Session).
	EventSession = "session"
	// EventLost reports that the recipe learned it no longer holds the
	// lock on Key (State says why).
	EventLost = "lost"
	// EventDemoted (election workload) reports that the worker no
	// longer leads service Key (State says why), as lost does for a lock.
	EventDemoted = "demoted"
	// EventApplied (config workload) reports that the client applied
	// version Version of config Key, whose data has digest Digest.
	EventApplied = "applied"
)

// Session states reported in EventSession and EventLost.
const (
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
	StateExpired      = "expired"
	// StateSessionChanged: the client came back with a different session
	// id than the one the lock was taken under.
	StateSessionChanged = "session-changed"
	// StateClosed: the worker (or its client library) closed the session
	// itself; a lost event with it names a grant that ended with the close.
	StateClosed = "closed"
)

// LostReasons are the states a lost event may carry, the list of
// docs/worker-protocol.md ("Lost reasons").
var LostReasons = []string{StateExpired, StateSessionChanged, StateClosed}

// Message is one line a worker writes to stdout: a response when ID is set
// and Event is empty, an event otherwise.
type Message struct {
	ID    int64  `json:"id,omitempty"`
	Type  string `json:"type,omitempty"`
	Event string `json:"event,omitempty"`
	Key   string `json:"key,omitempty"`
	// Token is the fencing token: of the grant (acquire), the one written
	// or read with (read, write), or of the lost grant (lost).
	Token *int64 `json:"token,omitempty"`
	// Node is the lock node path (acquire, release, lost).
	Node string `json:"node,omitempty"`
	// Value is the register value read (read) or written (write).
	Value *int64 `json:"value,omitempty"`
	// Accepted is the register's answer to a write or read.
	Accepted *bool `json:"accepted,omitempty"`
	// CurrentToken is, for an accepted read, the register reply's token
	// (the token of the last accepted write: which write the read observed,
	// so the register checker sees a stale value reappear); for a rejected
	// read or write, the reply's fence.
	CurrentToken *int64 `json:"current_token,omitempty"`
	// State and Session describe a session event (and why a lock was lost).
	State   string `json:"state,omitempty"`
	Session string `json:"session,omitempty"`
	// Password is the session password, base64, when the worker can tell
	// it; the nemesis uses it to expire the session from outside.
	Password string `json:"password,omitempty"`
	PID      int    `json:"pid,omitempty"`
	// Workload (hello) names the workload whose verbs the worker speaks;
	// absent means lock. The controller refuses a worker of another
	// workload than the run's.
	Workload string `json:"workload,omitempty"`
	// Protocol (hello, optional) is the protocol version the worker was
	// written against (Protocol); absent is 0, no version named. The
	// controller logs it and names what changed since (VersionNotice).
	Protocol int `json:"protocol,omitempty"`
	// Wakeups (acquire responses, optional) is how many times, during this
	// acquire, a watch notification woke its wait and made the lock code
	// examine the queue again (docs/worker-protocol.md, "Wake-ups"); the
	// herd checker compares wake-ups per acquire with the waiters.
	Wakeups *int64 `json:"wakeups,omitempty"`
	// Version and Digest (config workload): the config version an update
	// produced (or, on a failed update, the version found), a read saw or a
	// client applied, and the digest of its data.
	Version *int64 `json:"version,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Error   string `json:"error,omitempty"`
}
