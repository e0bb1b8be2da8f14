package lock

import (
	"context"
	"fmt"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
)

// NameGrantOverlap is the grant-overlap checker.
const NameGrantOverlap = "grant-overlap"

// Reasons an overlap is excused (GrantOverlapDetails.Excused).
const (
	ExcusedReportedLoss = "holder reported its session lost before the grant"
	ExcusedSessionGone  = "holder's session seen gone by the nemesis"
)

// Overlap is a grant given while an earlier grant of the same key was, by
// its own holder's account, still held.
type Overlap struct {
	Key string `json:"key"`
	// Holder held the lock from HeldFromNS and released it successfully
	// (release ok, invoked at ReleaseNS), and had reported no loss of its
	// session before the intruder's grant, nor had the nemesis seen its
	// session gone by then.
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

// FalseRelease is a release answered ok by a holder whose session the
// nemesis had already seen gone from the servers: its node was gone with
// its session, so "released" is a claim about a lock it no longer had.
type FalseRelease struct {
	Key        string `json:"key"`
	Holder     int    `json:"holder"`
	HolderTok  int64  `json:"holder_token"`
	HeldFromNS int64  `json:"held_from_ns"`
	ReleaseNS  int64  `json:"release_invoked_ns"`
	Session    string `json:"session"`
	// GoneAtNS is when the nemesis saw the session gone; it ended after
	// LastSeenNS.
	GoneAtNS   int64  `json:"gone_at_ns"`
	LastSeenNS int64  `json:"last_seen_ns"`
	Message    string `json:"message"`
}

// GrantOverlapDetails is the evidence of the grant-overlap checker.
type GrantOverlapDetails struct {
	Grants          int       `json:"grants"`
	Overlaps        []Overlap `json:"overlaps"`
	OverlapCount    int       `json:"overlap_count"`
	OverlapsOmitted int       `json:"overlaps_omitted,omitempty"`
	// Excused counts the overlaps a session loss excuses, by reason.
	Excused              map[string]int `json:"excused"`
	FalseReleases        []FalseRelease `json:"false_releases"`
	FalseReleaseCount    int            `json:"false_release_count"`
	FalseReleasesOmitted int            `json:"false_releases_omitted,omitempty"`
	// FirstViolationTimeNS is when (run clock) the first violation
	// happened, the figure test-all reports as time to first violation.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
}

// CheckGrantOverlap is an exact mutual-exclusion check. A release that
// answers ok is the holder's claim that its own node existed until the
// release deleted it, so the lock was its own all along (the worker
// protocol demands a failed release, "revoked", when the node was gone);
// if another process was granted the key after the holder's grant and
// before that release was even invoked, the lock gave one key to two
// holders.
//
// Only a loss of the holder's session excuses that, since ZooKeeper
// hands the lock on when the holder's session ends (and the claim is then
// mistaken rather than the lock broken); and only a loss that happened
// before the intruder's grant: (a) one the holder reported itself, a
// lost event for the key with reason expired or session-changed, or a
// session event expired for the grant's session, before the intruder was
// granted; or (b) one the nemesis verified on the servers: a session-gone
// observation of the holder's session, made after the grant, whose
// session was last seen alive before the intruder's grant (it may have
// ended before it). A lost event for any other reason excuses nothing (a
// worker that reports lost on its own release would otherwise blind the
// checker).
//
// A release answered ok although the nemesis had seen the holder's
// session gone before the release was invoked is a false claim of its
// own kind (its node was gone with its session), whether or not anyone
// was granted meanwhile.
//
// It is an OverlapStream fed the whole history (one implementation of the
// rules).
func CheckGrantOverlap(ctx context.Context, in checker.Input) checker.Result {
	s := NewOverlapStream(in.Limit(), !lockview.Monotone(in.History))
	if err := lockview.Feed(ctx, in.History, s.Add); err != nil {
		return checker.Cancelled(ctx)
	}
	s.Finish()
	d := s.Result()
	if d.OverlapCount+d.FalseReleaseCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d, Error: overlapSummary(d)}
}

// judgement is what judgeGrant found of one grant.
type judgement struct {
	session  lockview.Session
	falseRel *FalseRelease
	// overlaps are the intruders no loss excused (nor an observation made
	// so far); lost and gone count those excused.
	overlaps   []Overlap
	lost, gone int
}

// judgeGrant checks one grant a, released ok by rel, against the key's
// other grants (sorted by completion: only those granted while a was held
// are visited, found by binary search) and the holder's session.
func judgeGrant(x *lockview.Index, a, rel lockview.Op, grants []keyGrant) judgement {
	p := a.Process
	atok, _ := a.Token()
	j := judgement{session: x.SessionAt(p, a.Done)}
	if g, ok := x.GoneBy(p, j.session, a.Done, rel.Invoke); ok {
		j.falseRel = &FalseRelease{Key: a.Key, Holder: int(p), HolderTok: atok, HeldFromNS: a.Done,
			ReleaseNS: rel.Invoke, Session: g.Session, GoneAtNS: g.Time, LastSeenNS: g.LastSeenNS,
			Message: fmt.Sprintf("process %d released %s (token %d) ok at %s although the nemesis had seen its session %s gone from the servers at %s: its node was gone",
				p, a.Key, atok, checker.Seconds(rel.Invoke), g.Session, checker.Seconds(g.Time))}
	}
	lo := sort.Search(len(grants), func(i int) bool { return grants[i].op.Done > a.Done })
	if lo == len(grants) || grants[lo].op.Done >= rel.Invoke {
		return j
	}
	// A loss excuses every grant after it: the first reported one, and the
	// earliest a nemesis observation says the session may have ended.
	lost := x.FirstLoss(p, a.Key, j.session, a.Done, rel.Invoke)
	gone := x.EarliestGoneBefore(p, j.session, a.Done)
	for _, g := range grants[lo:] {
		b := g.op
		if b.Done >= rel.Invoke {
			break
		}
		if b.Process == p {
			continue
		}
		if b.Done > lost {
			j.lost++
			continue
		}
		if b.Done > gone {
			j.gone++
			continue
		}
		btok, _ := b.Token()
		j.overlaps = append(j.overlaps, Overlap{Key: a.Key, Holder: int(p), HolderTok: atok, HeldFromNS: a.Done,
			ReleaseNS: rel.Invoke, Intruder: int(b.Process), IntruderTok: btok, GrantedNS: b.Done,
			Message: fmt.Sprintf("process %d was granted %s (token %d) at %s while process %d held it (token %d, released ok later, no session loss before that grant)",
				b.Process, a.Key, btok, checker.Seconds(b.Done), p, atok)})
	}
	return j
}

func overlapSummary(d GrantOverlapDetails) string {
	var first string
	switch {
	case len(d.Overlaps) > 0 && (len(d.FalseReleases) == 0 || d.Overlaps[0].GrantedNS <= d.FalseReleases[0].ReleaseNS):
		first = d.Overlaps[0].Message
	case len(d.FalseReleases) > 0:
		first = d.FalseReleases[0].Message
	}
	return fmt.Sprintf("%d grants overlapped a grant that was still held, %d releases claimed a lock whose session was gone; first: %s",
		d.OverlapCount, d.FalseReleaseCount, first)
}
