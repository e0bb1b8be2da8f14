package lock

import (
	"context"
	"fmt"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"

	"github.com/zkchaos/zkchaos/history"
)

// NameGrantOverlap is the grant-overlap checker.
const NameGrantOverlap = "grant-overlap"

// Overlap is a grant given while an earlier grant of the same key was, by
// its own holder's account, still held.
type Overlap struct {
	Key string `json:"key"`
	// Holder held the lock from HeldFromNS and released it successfully
	// (release ok, invoked at ReleaseNS) without ever reporting it lost.
	Holder     int   `json:"holder"`
	HolderTok  int64 `json:"holder_token"`
	HeldFromNS int64 `json:"held_from_ns"`
	ReleaseNS  int64 `json:"release_invoked_ns"`
	// Intruder was granted the same key at GrantedNS, in between.
	Intruder    int    `json:"intruder"`
	IntruderTok int64  `json:"intruder_token"`
	GrantedNS   int64  `json:"granted_ns"`
	Message     string `json:"message"`
}

// GrantOverlapDetails is the evidence of the grant-overlap checker.
type GrantOverlapDetails struct {
	Grants          int       `json:"grants"`
	Overlaps        []Overlap `json:"overlaps"`
	OverlapCount    int       `json:"overlap_count"`
	OverlapsOmitted int       `json:"overlaps_omitted,omitempty"`
	// FirstViolationTimeNS is when (run clock) the first violation
	// happened, the figure test-all reports as time to first violation.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
}

// CheckGrantOverlap is an exact mutual-exclusion check that faults cannot
// excuse. A release that answers ok says the holder's own node existed
// until the release deleted it, so the lock was its own all along; if
// another process was granted the key after the holder's grant and before
// that release was even invoked, the lock gave one key to two holders
// while neither had lost its session. Pauses and expiries do not produce
// this: a holder whose session expired finds its node gone and answers
// revoked (or never answers), and reports the lock lost. Only a recipe
// that hands out the lock wrongly, or releases what is not its own, or
// says "released" of a node it no longer had, does.
func CheckGrantOverlap(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	d := GrantOverlapDetails{Overlaps: []Overlap{}}
	lostAt := map[history.Process][]lockview.Instant{}
	for _, e := range v.Instants {
		if e.F == history.FLost {
			lostAt[e.Process] = append(lostAt[e.Process], e)
		}
	}
	byKey := map[string][]lockview.Op{}
	var perProc = map[history.Process][]lockview.Op{}
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
	for p, ops := range perProc {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		for i, a := range ops {
			if a.F != history.FAcquire || a.Type != history.OK {
				continue
			}
			// The holder's next operation on the key that ends the grant.
			var rel *lockview.Op
			for j := i + 1; j < len(ops); j++ {
				if ops[j].Key == a.Key && (ops[j].F == history.FRelease || ops[j].F == history.FAcquire) {
					rel = &ops[j]
					break
				}
			}
			if rel == nil || rel.F != history.FRelease || rel.Type != history.OK {
				continue
			}
			if reportedLost(lostAt[p], a.Key, a.Done, rel.Done) {
				continue
			}
			atok, _ := a.Token()
			for _, b := range byKey[a.Key] {
				if b.Process == p || b.Done <= a.Done || b.Done >= rel.Invoke {
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
					Message: fmt.Sprintf("process %d was granted %s (token %d) while process %d held it (token %d, released ok later, never reported lost)",
						b.Process, a.Key, btok, p, atok)})
			}
		}
	}
	sort.Slice(d.Overlaps, func(i, j int) bool { return d.Overlaps[i].GrantedNS < d.Overlaps[j].GrantedNS })
	if d.OverlapCount > 0 {
		for _, o := range d.Overlaps {
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, o.GrantedNS)
		}
		return checker.Result{Valid: checker.Invalid, Details: d, Error: fmt.Sprintf("%d grants overlapped a grant that was still held: %s", d.OverlapCount, d.Overlaps[0].Message)}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

func reportedLost(ls []lockview.Instant, key string, from, to int64) bool {
	for _, l := range ls {
		if l.Key == key && l.Time >= from && l.Time <= to {
			return true
		}
	}
	return false
}
