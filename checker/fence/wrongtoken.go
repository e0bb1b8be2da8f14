package fence

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// NameWrongToken is the checker of the tokens a recipe presents.
const NameWrongToken = "wrong-token"

// Reasons a rejection is explained (WrongTokenDetails.Explained).
const (
	ExplainedNotHolding = "not holding by the history"
	ExplainedLost       = "lock or session lost"
	ExplainedNewerGrant = "newer grant"
	// ExplainedStaleGrant: the holder's own grant came after a grant of
	// the key with a higher token (a stale grant, e.g. a reconnect to a
	// deposed leader just resumed, whose reads are behind the quorum's).
	// The fence turning it away is fencing doing its job; the grant out of
	// token order is token-order's finding, not a wrong token.
	ExplainedStaleGrant   = "stale grant (a higher token granted before it)"
	ExplainedStrictSecond = "strict: second write under one grant"
)

// WrongToken is a read or write the fence rejected although its process
// still held the lock and nobody had been granted the key since: the
// token the recipe presented cannot be its grant's.
type WrongToken struct {
	Key     string `json:"key"`
	Process int    `json:"process"`
	Op      string `json:"op"`
	// GrantToken is the token of the holder's grant (its acquire's
	// answer), granted (answered) at GrantedNS.
	GrantToken *int64 `json:"grant_token"`
	GrantedNS  int64  `json:"granted_ns"`
	// Token is the token the worker says it presented, Fence the key's
	// fence the register answered with (current_token).
	Token      *int64 `json:"token"`
	Fence      *int64 `json:"fence"`
	InvokedNS  int64  `json:"invoked_ns"`
	RejectedNS int64  `json:"rejected_ns"`
	// Index is the rejection's completion in the history.
	Index   int64  `json:"index"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// WrongTokenDetails is the evidence of the wrong-token checker.
type WrongTokenDetails struct {
	// Rejections counts the register's rejections the history shows (a
	// read or write answered fail with current_token).
	Rejections int `json:"rejections"`
	// Explained counts the rejections a loss, a newer grant or the
	// register's strict mode explains, by reason.
	Explained         map[string]int `json:"explained"`
	Violations        []WrongToken   `json:"violations"`
	ViolationCount    int            `json:"violation_count"`
	ViolationsOmitted int            `json:"violations_omitted,omitempty"`
	// FirstViolationTimeNS is the first unexplained rejection (run clock).
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
}

// CheckWrongToken finds fencing tokens that are wrong although the lock
// works (a worker that reuses the token of its first grant for every
// later write passes every other checker, with almost all its writes
// turned away). The fence rejects a read or write only when a higher
// token reached the register first, and tokens grow with grants, so a
// correct holder is rejected only after a newer grant of the key: after
// it lost the lock (its session ended and the lock was granted again), or
// while it still believes it holds it. A rejection of a process that,
// by the history, still held the lock (its acquire ok, no release, no
// lost event, no session loss reported or seen by the nemesis since) and
// after whose grant no other process was granted the key before the
// rejection came back, has no such explanation: the token presented is
// not the grant's. The newer grant's ok is always recorded before the
// rejection's answer: the new holder reads (raising the fence) only after
// its grant was answered. In strict mode a second write under one grant
// is rejected by design and explained. So is a rejection of a holder whose
// grant itself was stale, recorded after a grant of the key with a higher
// token: a fenced soak under --nemesis all saw a worker reconnect to a
// deposed leader the moment it resumed from SIGSTOP and be granted its
// old node from that server's stale view, after its session had expired
// on the quorum and the lock had moved on; the register turned it away,
// as fencing should, and token-order reports the grant.
//
// It is a WrongTokenStream fed the whole history (one implementation of
// the rules).
func CheckWrongToken(ctx context.Context, in checker.Input) checker.Result {
	s := NewWrongTokenStream(in.Limit(), in.Fencing, !lockview.Monotone(in.History))
	if err := lockview.Feed(ctx, in.History, s.Add); err != nil {
		return checker.Cancelled(ctx)
	}
	s.Finish()
	d := s.Result()
	if d.ViolationCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d of %d register rejections hit a holder that no newer grant had replaced: the recipe presents the wrong fencing token; first: %s",
			d.ViolationCount, d.Rejections, d.Violations[0].Message)}
}

// rejected is a register rejection: a fail that carries the register's
// fence (a fail without it never reached the register).
func rejected(o lockview.Op) bool {
	return o.Type == history.Fail && o.Value != nil && o.Value.Current != nil
}

func wrongToken(g, o *lockview.Op) WrongToken {
	w := WrongToken{Key: o.Key, Process: int(o.Process), Op: o.F, GrantedNS: g.Done, InvokedNS: o.Invoke,
		RejectedNS: o.Done, Index: o.Index, Error: o.Error, Fence: o.Value.Current, Token: o.Value.Token}
	if t, ok := g.Token(); ok {
		w.GrantToken = &t
	}
	w.Message = fmt.Sprintf("process %d held %s (granted token %s at %s; no loss, no newer grant since) and the register rejected its %s with token %s at fence %s (%s)",
		w.Process, w.Key, tokenText(w.GrantToken), checker.Seconds(g.Done), w.Op, tokenText(w.Token), tokenText(w.Fence), w.Error)
	return w
}

func tokenText(t *int64) string {
	if t == nil {
		return "(not reported)"
	}
	return fmt.Sprint(*t)
}
