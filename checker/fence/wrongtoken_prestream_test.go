package fence

// The wrong-token checker as it was before it became a stream
// (docs/architecture.md "Streaming checkers"): kept unchanged but for its
// names as the oracle of TestWrongTokenMatchesPrestream.

import (
	"context"
	"fmt"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

func prestreamWrongToken(ctx context.Context, in checker.Input) checker.Result {
	w := prestreamWalk{v: lockview.Of(in.History), mode: in.Fencing, limit: in.Limit(), holds: map[prestreamHoldKey]*prestreamHeld{},
		d: WrongTokenDetails{Explained: map[string]int{}, Violations: []WrongToken{}}}
	w.grants = prestreamGrantsByKey(w.v.Ops)
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

// prestreamWalk follows every process's grants through the history.
type prestreamWalk struct {
	v      lockview.View
	mode   string
	limit  int
	grants map[string][]*lockview.Op
	holds  map[prestreamHoldKey]*prestreamHeld
	d      WrongTokenDetails
}

type prestreamHoldKey struct {
	p   history.Process
	key string
}

// held is a process's grant of a key and whether it wrote under it.
type prestreamHeld struct {
	grant *lockview.Op
	wrote bool
}

func (w *prestreamWalk) op(o *lockview.Op) {
	k := prestreamHoldKey{o.Process, o.Key}
	switch o.F {
	case history.FAcquire:
		delete(w.holds, k)
		if o.Type == history.OK {
			w.holds[k] = &prestreamHeld{grant: o}
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
func (w *prestreamWalk) judge(h *prestreamHeld, o *lockview.Op) {
	w.d.Rejections++
	var why string
	switch {
	case h == nil:
		why = ExplainedNotHolding
	case w.mode == register.ModeStrict && o.F == history.FWrite && h.wrote:
		why = ExplainedStrictSecond
	case prestreamStale(w.grants[o.Key], h.grant):
		why = ExplainedStaleGrant
	default:
		why = prestreamExplain(w.v, w.grants[o.Key], h.grant, o)
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

// prestreamGrantsByKey lists every granted acquire per key, by answer time.
func prestreamGrantsByKey(ops []lockview.Op) map[string][]*lockview.Op {
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

// prestreamStale: a grant of the key with a higher token was recorded
// before g (by history index).
func prestreamStale(grants []*lockview.Op, g *lockview.Op) bool {
	tok, ok := g.Token()
	if !ok {
		return false
	}
	for _, b := range grants {
		if bt, ok := b.Token(); ok && b.Index < g.Index && bt > tok {
			return true
		}
	}
	return false
}

// explain says why a holder's rejection is no fault of its token, or ""
// when nothing does: a loss of the lock or of the session after the grant,
// or a grant of the key to another process between the holder's grant and
// the rejection's answer.
func prestreamExplain(v lockview.View, grants []*lockview.Op, g, o *lockview.Op) string {
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
