package lock

// The liveness checker as it was before its replay was made to allocate
// nothing per event (docs/architecture.md, "Checker speed"):
// kept, unchanged but for its names, as the byte-for-byte oracle of
// TestLivenessMatchesPrefast.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"

	"github.com/zkchaos/zkchaos/history"
)

// prefastLiveness finds locks that stop being handed on: waiters stuck while
// the history shows nobody holding the lock, and keys that see no grant for
// far longer than the acquire timeout while acquires on them keep timing
// out. Waiting behind a holder that is paused or cut off is not a liveness
// failure (ZooKeeper must first expire its session), so the history's
// notion of "held" is conservative: a holder that was retired with an
// unknown outcome, or whose release is unknown, holds until someone else
// is granted the key. Time inside nemesis windows (plus a grace) is not
// counted: for faults of the ensemble on every key, for a fault aimed at
// one worker on the keys that worker used meanwhile.
func prefastLiveness(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	d := LivenessDetails{Stalls: []Stall{}}
	acqT := inferAcquireTimeout(v.Ops)
	freeT := max(2*time.Second, acqT*2/5)
	droughtT := max(5*time.Second, 3*acqT)
	d.AcquireTimeoutMS = ms(acqT)
	d.FreeThresholdMS, d.DroughtThresholdMS = ms(freeT), ms(droughtT)
	if !slices.ContainsFunc(v.Ops, func(o lockview.Op) bool { return o.F == history.FAcquire }) {
		d.Note = "no acquires in the history"
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	d.ExcusedFaults = len(v.Faults)
	byKey := map[string][]lockview.Op{}
	for _, o := range v.Ops {
		if o.Key != "" {
			byKey[o.Key] = append(byKey[o.Key], o)
		}
	}
	lost := map[string][]lockview.Instant{}
	for _, e := range v.Instants {
		if e.F == history.FLost {
			lost[e.Key] = append(lost[e.Key], e)
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	for _, k := range keys {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		ex := pfExcused(v.Faults, byKey[k])
		d.Stalls = append(d.Stalls, pfFreeStalls(k, byKey[k], lost[k], v.End, ex, freeT)...)
		d.Stalls = append(d.Stalls, pfDroughts(k, byKey[k], v.End, ex, droughtT)...)
	}
	if len(d.Stalls) > 0 {
		// A stall becomes a violation once it has lasted its threshold.
		for _, st := range d.Stalls {
			th := freeT
			if st.Kind == StallNoAcquisition {
				th = droughtT
			}
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, st.FromNS+int64(th))
		}
		first := d.Stalls[0]
		for _, st := range d.Stalls {
			if st.FromNS < first.FromNS {
				first = st
			}
		}
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d stalls (the lock was not handed on), first: %s", len(d.Stalls), first.Message)}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

type pfSpan struct{ from, to int64 }

// pfExcused are the fault windows (with grace) that count for a key: every
// ensemble fault, and client faults whose target used the key meanwhile
// (found by binary search in its operations sorted by invocation, not by
// a scan per fault), merged into their union.
func pfExcused(faults []checker.FaultWindow, ops []lockview.Op) *pfCover {
	used := pfUsesOf(ops)
	var out []pfSpan
	for _, f := range faults {
		if f.Process < 0 {
			out = append(out, pfSpan{f.From, f.To + int64(ensembleFaultGrace)})
			continue
		}
		to := f.To + int64(clientFaultGrace)
		if used[f.Process].during(f.From, to) {
			out = append(out, pfSpan{f.From, to})
		}
	}
	return pfCoverOf(out)
}

// pfUses are one process's operations on a key sorted by invocation, with,
// for each prefix, the latest completion of its completed operations and
// whether it holds an open one (an open operation lasts to any end).
type pfUses struct {
	invokes []int64
	maxDone []int64
	open    []bool
}

func pfUsesOf(ops []lockview.Op) map[history.Process]*pfUses {
	type use struct {
		invoke, done int64
		open         bool
	}
	byProc := map[history.Process][]use{}
	for _, o := range ops {
		byProc[o.Process] = append(byProc[o.Process], use{o.Invoke, o.Done, o.Type == ""})
	}
	out := map[history.Process]*pfUses{}
	for p, us := range byProc {
		slices.SortFunc(us, func(a, b use) int { return cmp.Compare(a.invoke, b.invoke) })
		u := &pfUses{invokes: make([]int64, len(us)), maxDone: make([]int64, len(us)), open: make([]bool, len(us))}
		done, open := int64(math.MinInt64), false
		for i, o := range us {
			if o.open {
				open = true
			} else {
				done = max(done, o.done)
			}
			u.invokes[i], u.maxDone[i], u.open[i] = o.invoke, done, open
		}
		out[p] = u
	}
	return out
}

// during says whether an operation was invoked by to and not completed
// before from (an open one counts as completed at to).
func (u *pfUses) during(from, to int64) bool {
	if u == nil {
		return false
	}
	n := sort.Search(len(u.invokes), func(i int) bool { return u.invokes[i] > to })
	return n > 0 && (u.maxDone[n-1] >= from || (u.open[n-1] && to >= from))
}

// pfCover is a union of spans, disjoint and sorted, with the length covered
// before each: how much of a stretch lies outside it takes two binary
// searches.
type pfCover struct {
	spans  []pfSpan
	before []int64
}

func pfCoverOf(ex []pfSpan) *pfCover {
	var s []pfSpan
	for _, e := range ex {
		if e.from < e.to {
			s = append(s, e)
		}
	}
	slices.SortFunc(s, func(a, b pfSpan) int { return cmp.Compare(a.from, b.from) })
	c := &pfCover{}
	for _, e := range s {
		if n := len(c.spans); n > 0 && e.from <= c.spans[n-1].to {
			c.spans[n-1].to = max(c.spans[n-1].to, e.to)
			continue
		}
		c.spans = append(c.spans, e)
	}
	var sum int64
	for _, e := range c.spans {
		c.before = append(c.before, sum)
		sum += e.to - e.from
	}
	return c
}

// covered is how much of the pfCover lies before t.
func (c *pfCover) covered(t int64) int64 {
	i := sort.Search(len(c.spans), func(i int) bool { return c.spans[i].from >= t })
	if i == 0 {
		return 0
	}
	last := c.spans[i-1]
	return c.before[i-1] + min(last.to, t) - last.from
}

// counted is how much of [from, to] lies outside the pfCover.
func (c *pfCover) counted(from, to int64) int64 {
	if to <= from {
		return to - from
	}
	return to - from - (c.covered(to) - c.covered(from))
}

// pfFreeStalls replays one key: holders come and go, waiters wait; every
// stretch where the key is free while someone waits is measured.
func pfFreeStalls(key string, ops []lockview.Op, lost []lockview.Instant, end int64, ex *pfCover, limit time.Duration) []Stall {
	evs := pfKeyEvents(ops, lost, end)
	holders := map[history.Process]bool{} // true: a ghost (outcome unknown)
	waiting := map[history.Process]bool{}
	apply := func(e pfKeyEvent) {
		switch e.kind {
		case pfEvWait:
			waiting[e.p] = true
		case pfEvAnswer:
			delete(waiting, e.p)
			switch e.typ {
			case history.OK:
				// A grant ends every ghost: ZooKeeper handed the lock on.
				for p, ghost := range holders {
					if ghost {
						delete(holders, p)
					}
				}
				holders[e.p] = false
			case history.Info, "":
				holders[e.p] = true // it may hold the lock
			}
		case pfEvUnsure:
			if _, ok := holders[e.p]; ok {
				holders[e.p] = true
			}
		case pfEvGone:
			delete(holders, e.p)
		}
	}
	var out []Stall
	var from int64 = -1
	stuck := map[history.Process]bool{}
	flush := func(t int64) {
		if from < 0 {
			return
		}
		if c := ex.counted(from, t); c > int64(limit) {
			out = append(out, Stall{Kind: StallFreeWithWaiters, Key: key, FromNS: from, ToNS: t, CountedMS: float64(c) / 1e6,
				Processes: pfSortedProcs(stuck),
				Message: fmt.Sprintf("%s was free for %.1fs (%.1fs outside fault windows) while processes %v waited for it",
					key, float64(t-from)/1e9, float64(c)/1e9, pfSortedProcs(stuck))})
		}
		from = -1
		clear(stuck)
	}
	for _, e := range evs {
		apply(e)
		stalled := len(holders) == 0 && len(waiting) > 0
		switch {
		case stalled && from < 0:
			from = e.t
		case !stalled && from >= 0:
			flush(e.t)
		}
		if from >= 0 {
			for p := range waiting {
				stuck[p] = true
			}
		}
	}
	flush(end)
	return out
}

// pfKeyEvent is one change of a key's holders or waiters (pfFreeStalls).
type pfKeyEvent struct {
	t    int64
	rank int8 // at equal times: completions before invocations
	kind int8
	seq  int32 // order appended
	p    history.Process
	typ  history.Type
}

const (
	pfEvWait   = iota // an acquire invoked
	pfEvAnswer        // an acquire answered (typ), or never
	pfEvUnsure        // another operation without a known outcome: a holder may be a ghost
	pfEvGone          // a release answered, or a lost event: no longer a holder
)

// pfKeyEvents lists a key's changes in time order (values, not closures:
// the replay of a long history allocates nothing per event).
func pfKeyEvents(ops []lockview.Op, lost []lockview.Instant, end int64) []pfKeyEvent {
	evs := make([]pfKeyEvent, 0, 2*len(ops)+len(lost))
	for _, o := range ops {
		switch {
		case o.F == history.FAcquire:
			done := o.Done
			if o.Type == "" {
				done = end
			}
			evs = append(evs, pfKeyEvent{t: o.Invoke, rank: 1, kind: pfEvWait, p: o.Process}, pfKeyEvent{t: done, kind: pfEvAnswer, p: o.Process, typ: o.Type})
		case o.Type == "" || o.Type == history.Info:
			evs = append(evs, pfKeyEvent{t: o.Done, kind: pfEvUnsure, p: o.Process})
		case o.F == history.FRelease:
			evs = append(evs, pfKeyEvent{t: o.Done, kind: pfEvGone, p: o.Process})
		}
	}
	for _, l := range lost {
		evs = append(evs, pfKeyEvent{t: l.Time, kind: pfEvGone, p: l.Process})
	}
	// Stable by the order appended, with an unstable sort: faster than
	// slices.SortStableFunc's merges.
	for i := range evs {
		evs[i].seq = int32(i)
	}
	slices.SortFunc(evs, func(a, b pfKeyEvent) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.rank, b.rank), cmp.Compare(a.seq, b.seq))
	})
	return evs
}

// pfDroughts finds long stretches without a grant of key during which
// acquires on it timed out.
func pfDroughts(key string, ops []lockview.Op, end int64, ex *pfCover, limit time.Duration) []Stall {
	var grants []int64
	first := int64(-1)
	for _, o := range ops {
		if o.F != history.FAcquire {
			continue
		}
		if first < 0 || o.Invoke < first {
			first = o.Invoke
		}
		if o.Type == history.OK {
			grants = append(grants, o.Done)
		}
	}
	if first < 0 {
		return nil
	}
	slices.Sort(grants)
	bounds := append(append([]int64{first}, grants...), end)
	var out []Stall
	for i := 0; i+1 < len(bounds); i++ {
		from, to := bounds[i], bounds[i+1]
		c := ex.counted(from, to)
		if c <= int64(limit) {
			continue
		}
		failed := map[history.Process]bool{}
		n := 0
		for _, o := range ops {
			if o.F == history.FAcquire && o.Type != history.OK && o.Invoke >= from && o.Done <= to && o.Type != "" {
				failed[o.Process] = true
				n++
			}
		}
		if n < 2 {
			continue // nobody was kept waiting: the key was simply not asked for
		}
		out = append(out, Stall{Kind: StallNoAcquisition, Key: key, FromNS: from, ToNS: to, CountedMS: float64(c) / 1e6,
			Processes: pfSortedProcs(failed),
			Message: fmt.Sprintf("no grant of %s for %.1fs (%.1fs outside fault windows) while %d acquires by processes %v failed",
				key, float64(to-from)/1e9, float64(c)/1e9, n, pfSortedProcs(failed))})
	}
	return out
}

func pfSortedProcs(m map[history.Process]bool) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, int(p))
	}
	sort.Ints(out)
	return out
}
