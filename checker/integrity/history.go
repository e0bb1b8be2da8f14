package integrity

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// slot is where an invocation waits for its completion. A worker process
// is sequential, with one slot for its operations and one for its instant
// events (session, lost, late), which it reports while an operation is
// in flight. The nemesis may have several operations open at once (an
// undo may start before an injection's record, session-gone observations
// come from their own goroutine), so it has a slot per verb, first in
// first out.
type slot struct {
	p       history.Process
	instant bool
	f       string // nemesis only
}

func slotOf(e history.Event) slot {
	s := slot{p: e.Process, instant: checker.IsInstant(e.F)}
	if e.Process == history.Nemesis {
		s.f = e.F
	}
	return s
}

// opKey is what a completion must share with its invocation.
type opKey struct {
	s      slot
	f, key string
}

// pairing is the walk over the history in file order.
type pairing struct {
	d     *Details
	open  map[slot][]history.Event
	early map[opKey][]history.Event // completions seen before any invocation
	// Indexes seen: all of 0..dense (while there has been no gap, that is
	// every index so far: no set is needed), and those in seen.
	dense    int64
	gapped   bool
	seen     map[int64]struct{}
	prevIdx  int64
	prevTime int64
}

// checkHistory checks indexes, times and the pairing of completions with
// invocations; false when ctx ended first.
func checkHistory(ctx context.Context, h []history.Event, d *Details) bool {
	w := pairing{d: d, open: map[slot][]history.Event{}, early: map[opKey][]history.Event{},
		seen: map[int64]struct{}{}, dense: -1, prevIdx: -1}
	for i, e := range h {
		if i&0xffff == 0 && ctx.Err() != nil {
			return false
		}
		w.order(i, e)
		if e.Type == history.Invoke {
			w.invoke(e)
		} else {
			w.complete(e)
		}
	}
	for _, q := range w.open {
		d.OpenAtEnd += len(q)
	}
	var left []history.Event
	for _, q := range w.early {
		left = append(left, q...)
	}
	sortByIndex(left)
	for _, c := range left {
		d.add(Problem{Kind: KindUnmatched, Index: c.Index,
			Message: fmt.Sprintf("%s of process %s (%s %s) at index %d has no invocation", c.Type, c.Process, c.F, c.Key, c.Index)})
	}
	return true
}

// order checks that indexes run 0, 1, 2, ... and the clock never goes
// back, in file order.
func (w *pairing) order(i int, e history.Event) {
	line := i + 1
	_, again := w.seen[e.Index]
	switch {
	case (e.Index >= 0 && e.Index <= w.dense) || again:
		w.d.add(Problem{Kind: KindDuplicateIndex, Index: e.Index,
			Message: fmt.Sprintf("index %d appears again at line %d: two events claim one place", e.Index, line)})
	case e.Index < w.prevIdx:
		w.d.add(Problem{Kind: KindIndexOrder, Index: e.Index,
			Message: fmt.Sprintf("index %d at line %d comes after index %d", e.Index, line, w.prevIdx)})
	case e.Index > w.prevIdx+1:
		w.d.add(Problem{Kind: KindIndexGap, Index: e.Index,
			Message: fmt.Sprintf("indexes %d to %d are missing before line %d: recorded events were lost", w.prevIdx+1, e.Index-1, line)})
		w.gapped = true
	}
	if !w.gapped && e.Index == w.dense+1 {
		w.dense = e.Index
	} else {
		w.seen[e.Index] = struct{}{}
	}
	w.prevIdx = max(w.prevIdx, e.Index)
	if i > 0 && e.Time < w.prevTime {
		w.d.add(Problem{Kind: KindTimeOrder, Index: e.Index,
			Message: fmt.Sprintf("time goes back at index %d: %d ns after %d ns", e.Index, e.Time, w.prevTime)})
	}
	w.prevTime = max(w.prevTime, e.Time)
}

func (w *pairing) invoke(e history.Event) {
	s := slotOf(e)
	k := opKey{s, e.F, e.Key}
	if q := w.early[k]; len(q) > 0 {
		// Its completion came first: the pair is used up, and wrong.
		c := q[0]
		w.early[k] = q[1:]
		w.d.add(Problem{Kind: KindEarlyCompletion, Index: c.Index,
			Message: fmt.Sprintf("%s of process %s (%s %s) at index %d comes before its invocation at index %d", c.Type, c.Process, c.F, c.Key, c.Index, e.Index)})
		return
	}
	if q := w.open[s]; len(q) > 0 && e.Process != history.Nemesis {
		o := q[0]
		w.d.add(Problem{Kind: KindDoubleInvocation, Index: e.Index,
			Message: fmt.Sprintf("process %s invoked %s %s at index %d while its %s %s at index %d was still open", e.Process, e.F, e.Key, e.Index, o.F, o.Key, o.Index)})
		w.open[s] = q[:0]
	}
	w.open[s] = append(w.open[s], e)
}

func (w *pairing) complete(e history.Event) {
	s := slotOf(e)
	q := w.open[s]
	if len(q) == 0 {
		k := opKey{s, e.F, e.Key}
		w.early[k] = append(w.early[k], e)
		return
	}
	inv := q[0]
	w.open[s] = q[1:]
	switch {
	case inv.F != e.F || inv.Key != e.Key:
		w.d.add(Problem{Kind: KindMismatched, Index: e.Index,
			Message: fmt.Sprintf("%s of process %s (%s %s) at index %d answers its open invocation %s %s at index %d", e.Type, e.Process, e.F, e.Key, e.Index, inv.F, inv.Key, inv.Index)})
	case e.Time < inv.Time:
		w.d.add(Problem{Kind: KindEarlyCompletion, Index: e.Index,
			Message: fmt.Sprintf("%s of process %s (%s %s) at index %d completes at %d ns, before its invocation at %d ns", e.Type, e.Process, e.F, e.Key, e.Index, e.Time, inv.Time)})
	}
}

// OpenAtEnd lists, in history order, the invocations h leaves open: those
// checkHistory counts in Details.OpenAtEnd, by the same pairing. A soak
// resumed after its controller died completes exactly these as info (the
// checkers already read an open invocation as one whose outcome is
// unknown), so the rule of what was interrupted has this one owner.
func OpenAtEnd(h []history.Event) []history.Event {
	d := &Details{ProblemCounts: map[string]int{}}
	w := pairing{d: d, open: map[slot][]history.Event{}, early: map[opKey][]history.Event{},
		seen: map[int64]struct{}{}, dense: -1, prevIdx: -1}
	for _, e := range h {
		if e.Type == history.Invoke {
			w.invoke(e)
		} else {
			w.complete(e)
		}
	}
	var out []history.Event
	for _, q := range w.open {
		out = append(out, q...)
	}
	sortByIndex(out)
	return out
}
