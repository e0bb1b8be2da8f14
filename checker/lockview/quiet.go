package lockview

import (
	"math"

	"github.com/zkchaos/zkchaos/history"
)

// Quiet follows the nemesis' faults as they are recorded, so that a
// streaming checker knows when a session-gone observation can no longer
// excuse what it found. An observation is made by the watch of a client
// fault in effect: the watch starts when the fault acts (after its
// start's invocation), its last_seen_ns is a time it saw the session
// alive, and the scheduler ends it before the fault's stop is invoked
// (nemesis/sessionwatch.go). So once every
// fault started before t has had its stop invoked, no observation whose
// session was last seen before t can still come.
//
// It is a timing rule for early answers only, never a verdict: the
// batch checkers (the streams fed the whole history) answer at the end,
// when every observation is in.
type Quiet struct {
	open []openFault // oldest first
}

type openFault struct {
	start, stop string
	from        int64
}

// Add reads the next nemesis event (others are ignored).
func (q *Quiet) Add(e history.Event) {
	if e.Process != history.Nemesis || e.F == history.FSessionGone {
		return
	}
	stop, isStart := history.StopVerb(e.F)
	switch {
	case isStart && e.Type == history.Invoke:
		q.open = append(q.open, openFault{start: e.F, stop: stop, from: e.Time})
	case isStart && e.Type == history.Fail:
		q.drop(func(f openFault) bool { return f.start == e.F })
	case e.F == history.FRestore && e.Type != history.Invoke:
		q.open = q.open[:0]
	case history.IsFaultStop(e.F) && e.Type == history.Invoke:
		q.drop(func(f openFault) bool { return f.stop == e.F })
	}
}

// drop ends the oldest open fault that match says is the one.
func (q *Quiet) drop(match func(openFault) bool) {
	for i, f := range q.open {
		if match(f) {
			q.open = append(q.open[:i], q.open[i+1:]...)
			return
		}
	}
}

// Since is the earliest start of a fault still in effect (math.MaxInt64
// when none is): an observation still to come was last seen at or after
// it.
func (q *Quiet) Since() int64 {
	out := int64(math.MaxInt64)
	for _, f := range q.open {
		out = min(out, f.from)
	}
	return out
}
