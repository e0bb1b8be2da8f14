package fence

import (
	"context"
	"fmt"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/register"
)

// NameWrongToken is the checker of the tokens a recipe presents.
const NameWrongToken = "wrong-token"

// Reasons a rejection is explained (WrongTokenDetails.Explained).
const (
	ExplainedNotHolding   = "not holding by the history"
	ExplainedLost         = "lock or session lost"
	ExplainedNewerGrant   = "newer grant"
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
// is rejected by design and explained.
func CheckWrongToken(ctx context.Context, in checker.Input) checker.Result {
	w := tokenWalk{v: lockview.Of(in.History), mode: in.Fencing, limit: in.Limit(), holds: map[holdKey]*held{},
		d: WrongTokenDetails{Explained: map[string]int{}, Violations: []WrongToken{}}}
	w.grants = grantsByKey(w.v.Ops)
	for i := range w.v.Ops {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		w.op(&w.v.Ops[i])
	}
	d := w.d
	if d.ViolationCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d of %d register rejections hit a holder that no newer grant had replaced: the recipe presents the wrong fencing token; first: %s",
			d.ViolationCount, d.Rejections, d.Violations[0].Message)}
}

// tokenWalk follows every process's grants through the history.
type tokenWalk struct {
	v      lockview.View
	mode   string
	limit  int
	grants map[string][]*lockview.Op
	holds  map[holdKey]*held
	d      WrongTokenDetails
}

type holdKey struct {
	p   history.Process
	key string
}

// held is a process's grant of a key and whether it wrote under it.
type held struct {
	grant *lockview.Op
	wrote bool
}

func (w *tokenWalk) op(o *lockview.Op) {
	k := holdKey{o.Process, o.Key}
	switch o.F {
	case history.FAcquire:
		delete(w.holds, k)
		if o.Type == history.OK {
			w.holds[k] = &held{grant: o}
		}
		return
	case history.FRelease:
		delete(w.holds, k)
		return
	case history.FRead, history.FWrite:
	default:
		return
	}
	h := w.holds[k]
	if rejected(*o) {
		w.judge(h, o)
	}
	if h != nil && o.F == history.FWrite && (o.Type != history.Fail || rejected(*o)) {
		h.wrote = true // it reached (or may have reached) the register
	}
}

// judge explains a rejection or records it as a wrong token.
func (w *tokenWalk) judge(h *held, o *lockview.Op) {
	w.d.Rejections++
	var why string
	switch {
	case h == nil:
		why = ExplainedNotHolding
	case w.mode == register.ModeStrict && o.F == history.FWrite && h.wrote:
		why = ExplainedStrictSecond
	default:
		why = explain(w.v, w.grants[o.Key], h.grant, o)
	}
	if why != "" {
		w.d.Explained[why]++
		return
	}
	w.d.ViolationCount++
	w.d.FirstViolationTimeNS = checker.Earliest(w.d.FirstViolationTimeNS, o.Done)
	if len(w.d.Violations) < w.limit {
		w.d.Violations = append(w.d.Violations, wrongToken(h.grant, o))
	} else {
		w.d.ViolationsOmitted++
	}
}

// rejected is a register rejection: a fail that carries the register's
// fence (a fail without it never reached the register).
func rejected(o lockview.Op) bool {
	return o.Type == history.Fail && o.Value != nil && o.Value.Current != nil
}

// grantsByKey lists every granted acquire per key, by answer time.
func grantsByKey(ops []lockview.Op) map[string][]*lockview.Op {
	out := map[string][]*lockview.Op{}
	for i := range ops {
		if o := &ops[i]; o.F == history.FAcquire && o.Type == history.OK {
			out[o.Key] = append(out[o.Key], o)
		}
	}
	for _, gs := range out {
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].Done < gs[j].Done })
	}
	return out
}

// explain says why a holder's rejection is no fault of its token, or ""
// when nothing does: a loss of the lock or of the session after the grant,
// or a grant of the key to another process between the holder's grant and
// the rejection's answer.
func explain(v lockview.View, grants []*lockview.Op, g, o *lockview.Op) string {
	for _, e := range v.Instants {
		if e.Process == o.Process && e.F == history.FLost && e.Key == o.Key && e.Time >= g.Done && e.Time < o.Done {
			return ExplainedLost
		}
	}
	session := v.SessionAt(g.Process, g.Done)
	if _, ok := v.LossReported(g.Process, g.Key, session, g.Done, o.Done); ok {
		return ExplainedLost
	}
	if _, ok := v.GoneBefore(g.Process, session, g.Done, o.Done); ok {
		return ExplainedLost
	}
	for _, b := range grants {
		if b.Process != o.Process && b.Done > g.Done && b.Done < o.Done {
			return ExplainedNewerGrant
		}
	}
	return ""
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
