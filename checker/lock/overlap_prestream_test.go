package lock

// The n log n grant-overlap checker as it was before it became a stream
// (docs/architecture.md "Streaming checkers"): kept unchanged but for its
// names as the oracle of TestGrantOverlapMatchesPrestream.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

func prestreamGrantOverlap(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	x := v.Index()
	d := GrantOverlapDetails{Overlaps: []Overlap{}, FalseReleases: []FalseRelease{}, Excused: map[string]int{}}
	// Pointers into v.Ops, not copies: copying the operations was most of
	// the check's time once it was n log n.
	byKey := map[string][]*lockview.Op{}
	perProc := map[history.Process][]*lockview.Op{}
	for i := range v.Ops {
		o := &v.Ops[i]
		perProc[o.Process] = append(perProc[o.Process], o)
		if o.F == history.FAcquire && o.Type == history.OK {
			byKey[o.Key] = append(byKey[o.Key], o)
			d.Grants++
		}
	}
	for k := range byKey {
		gs := byKey[k]
		sort.SliceStable(gs, func(i, j int) bool { return gs[i].Done < gs[j].Done })
	}
	limit := in.Limit()
	for _, p := range slices.Sorted(maps.Keys(perProc)) {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		ops := perProc[p]
		ends := prestreamGrantEnds(ops)
		for i, a := range ops {
			if a.F == history.FAcquire && a.Type == history.OK && ends[i] >= 0 && ops[ends[i]].F == history.FRelease && ops[ends[i]].Type == history.OK {
				prestreamJudgeGrant(x, &d, *a, *ops[ends[i]], byKey[a.Key], limit)
			}
		}
	}
	sort.SliceStable(d.Overlaps, func(i, j int) bool { return d.Overlaps[i].GrantedNS < d.Overlaps[j].GrantedNS })
	sort.SliceStable(d.FalseReleases, func(i, j int) bool { return d.FalseReleases[i].ReleaseNS < d.FalseReleases[j].ReleaseNS })
	for _, o := range d.Overlaps {
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, o.GrantedNS)
	}
	for _, f := range d.FalseReleases {
		d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, f.ReleaseNS)
	}
	if d.OverlapCount+d.FalseReleaseCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d, Error: overlapSummary(d)}
}

// prestreamGrantEnds gives, for each of one process's operations, the index of its
// next acquire or release of the same key (the operation that ends a
// grant), or -1: one pass from the end instead of a scan per grant.
func prestreamGrantEnds(ops []*lockview.Op) []int {
	ends := make([]int, len(ops))
	next := map[string]int{}
	for i := len(ops) - 1; i >= 0; i-- {
		j, ok := next[ops[i].Key]
		if !ok {
			j = -1
		}
		ends[i] = j
		if ops[i].F == history.FRelease || ops[i].F == history.FAcquire {
			next[ops[i].Key] = i
		}
	}
	return ends
}

// prestreamJudgeGrant checks one grant a, released ok by rel, against the key's
// other grants (sorted by completion: only those granted while a was held
// are visited, found by binary search) and the holder's session.
func prestreamJudgeGrant(x *lockview.Index, d *GrantOverlapDetails, a, rel lockview.Op, grants []*lockview.Op, limit int) {
	p := a.Process
	atok, _ := a.Token()
	session := x.SessionAt(p, a.Done)
	if g, ok := x.GoneBy(p, session, a.Done, rel.Invoke); ok {
		d.FalseReleaseCount++
		if len(d.FalseReleases) < limit {
			d.FalseReleases = append(d.FalseReleases, FalseRelease{Key: a.Key, Holder: int(p), HolderTok: atok, HeldFromNS: a.Done,
				ReleaseNS: rel.Invoke, Session: g.Session, GoneAtNS: g.Time, LastSeenNS: g.LastSeenNS,
				Message: fmt.Sprintf("process %d released %s (token %d) ok at %s although the nemesis had seen its session %s gone from the servers at %s: its node was gone",
					p, a.Key, atok, checker.Seconds(rel.Invoke), g.Session, checker.Seconds(g.Time))})
		} else {
			d.FalseReleasesOmitted++
		}
	}
	lo := sort.Search(len(grants), func(i int) bool { return grants[i].Done > a.Done })
	if lo == len(grants) || grants[lo].Done >= rel.Invoke {
		return
	}
	// A loss excuses every grant after it: the first reported one, and the
	// earliest a nemesis observation says the session may have ended.
	lost := x.FirstLoss(p, a.Key, session, a.Done, rel.Invoke)
	gone := x.EarliestGoneBefore(p, session, a.Done)
	for _, b := range grants[lo:] {
		if b.Done >= rel.Invoke {
			break
		}
		if b.Process == p {
			continue
		}
		if b.Done > lost {
			d.Excused[ExcusedReportedLoss]++
			continue
		}
		if b.Done > gone {
			d.Excused[ExcusedSessionGone]++
			continue
		}
		btok, _ := b.Token()
		d.OverlapCount++
		if len(d.Overlaps) >= limit {
			d.OverlapsOmitted++
			continue
		}
		d.Overlaps = append(d.Overlaps, Overlap{Key: a.Key, Holder: int(p), HolderTok: atok, HeldFromNS: a.Done,
			ReleaseNS: rel.Invoke, Intruder: int(b.Process), IntruderTok: btok, GrantedNS: b.Done,
			Message: fmt.Sprintf("process %d was granted %s (token %d) at %s while process %d held it (token %d, released ok later, no session loss before that grant)",
				b.Process, a.Key, btok, checker.Seconds(b.Done), p, atok)})
	}
}
