package lock

// The grant-overlap checker as it was before it was made n log n
// (docs/measurements.md "Checker speed"): every grant compared with every
// grant of its key, and the history scanned for each session question.
// It is kept here, unchanged but for its names, as the reference oracle
// of the differential test (TestGrantOverlapMatchesOracle).

import (
	"context"
	"fmt"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// oracleGrantOverlap is the former CheckGrantOverlap.
func oracleGrantOverlap(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	d := GrantOverlapDetails{Overlaps: []Overlap{}, FalseReleases: []FalseRelease{}, Excused: map[string]int{}}
	byKey := map[string][]lockview.Op{}
	perProc := map[history.Process][]lockview.Op{}
	for _, o := range v.Ops {
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
	for _, ops := range perProc {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		for i, a := range ops {
			if a.F != history.FAcquire || a.Type != history.OK {
				continue
			}
			if rel := oracleReleaseOf(ops[i+1:], a.Key); rel != nil {
				oracleJudgeGrant(v, &d, a, *rel, byKey[a.Key], limit)
			}
		}
	}
	sort.Slice(d.Overlaps, func(i, j int) bool { return d.Overlaps[i].GrantedNS < d.Overlaps[j].GrantedNS })
	sort.Slice(d.FalseReleases, func(i, j int) bool { return d.FalseReleases[i].ReleaseNS < d.FalseReleases[j].ReleaseNS })
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

// releaseOf is the holder's release of key that answered ok, if its next
// operation on key that ends the grant is one.
func oracleReleaseOf(later []lockview.Op, key string) *lockview.Op {
	for j := range later {
		o := &later[j]
		if o.Key != key || (o.F != history.FRelease && o.F != history.FAcquire) {
			continue
		}
		if o.F == history.FRelease && o.Type == history.OK {
			return o
		}
		return nil
	}
	return nil
}

// judgeGrant checks one grant a, released ok by rel, against the key's
// other grants and the holder's session.
func oracleJudgeGrant(v lockview.View, d *GrantOverlapDetails, a, rel lockview.Op, grants []lockview.Op, limit int) {
	p := a.Process
	atok, _ := a.Token()
	session := v.SessionAt(p, a.Done)
	if g, ok := v.GoneBy(p, session, a.Done, rel.Invoke); ok {
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
	for _, b := range grants {
		if b.Process == p || b.Done <= a.Done || b.Done >= rel.Invoke {
			continue
		}
		if _, ok := v.LossReported(p, a.Key, session, a.Done, b.Done); ok {
			d.Excused[ExcusedReportedLoss]++
			continue
		}
		if _, ok := v.GoneBefore(p, session, a.Done, b.Done); ok {
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
