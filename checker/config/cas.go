package config

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Kinds of config-cas violations.
const (
	// KindBlindWrite: an ok update's new version is not the one after
	// the version it read: it overwrote versions it never read (setData
	// without the expected version, or with a wrong one).
	KindBlindWrite = "blind-write"
	// KindDuplicateVersion: two ok updates produced the same version;
	// one of them was lost.
	KindDuplicateVersion = "duplicate-version"
)

// CASViolation is an acknowledged update that was no compare-and-set.
type CASViolation struct {
	Kind     string `json:"kind"`
	Process  int    `json:"process"`
	Key      string `json:"key"`
	Version  int64  `json:"version"`
	Expected *int64 `json:"expected_version,omitempty"`
	// Other is the update that produced the same version first
	// (duplicate-version).
	OtherProcess *int   `json:"other_process,omitempty"`
	OtherOKNS    *int64 `json:"other_ok_ns,omitempty"`
	InvokedNS    int64  `json:"invoked_ns"`
	OKNS         int64  `json:"ok_ns"`
	Index        int64  `json:"index"`
	Message      string `json:"message"`
}

// CASDetails is the evidence of config-cas.
type CASDetails struct {
	OKUpdates     int `json:"ok_updates"`
	FailedUpdates int `json:"failed_updates"`
	// UnknownUpdates (info, or open at the end) are not judged.
	UnknownUpdates int `json:"unknown_updates"`
	// Unjudged counts ok updates without a new version or an expected
	// one: the checker cannot say whether they were compare-and-sets.
	Unjudged int `json:"unjudged,omitempty"`
	// Initial counts ok updates that produced version 0: the initial
	// config's creation (setData never produces it), not judged.
	Initial              int            `json:"initial,omitempty"`
	Violations           []CASViolation `json:"violations"`
	ViolationCount       int            `json:"violation_count"`
	ViolationsOmitted    int            `json:"violations_omitted,omitempty"`
	FirstViolationTimeNS *int64         `json:"first_violation_time_ns,omitempty"`
	Note                 string         `json:"note,omitempty"`
}

// CheckCAS checks that the acknowledged updates of each key, sorted by the
// version they produced, form one chain of compare-and-sets: each
// produced the version after the one it read (Version == Expected+1),
// and no two produced the same version. Gaps are allowed: updates with an
// unknown outcome may have filled them, and are not judged themselves.
func CheckCAS(ctx context.Context, in checker.Input) checker.Result {
	v := viewOf(in.History)
	var d CASDetails
	byKey := map[string][]lockview.Op{}
	for _, o := range v.updates {
		switch {
		case o.Type == history.Fail:
			d.FailedUpdates++
		case unknownOutcome(o):
			d.UnknownUpdates++
		case o.Type == history.OK:
			d.OKUpdates++
			if ver, _, ok := written(o); ok && ver == 0 {
				d.Initial++ // the node's creation, should it be recorded as an update
				continue
			}
			if _, _, ok := written(o); !ok || expectedOf(o) == nil {
				d.Unjudged++
				continue
			}
			byKey[o.Key] = append(byKey[o.Key], o)
		}
	}
	var ev evidence[CASViolation]
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		chain(byKey[k], in.Limit(), &ev)
	}
	d.Violations, d.ViolationCount, d.ViolationsOmitted, d.FirstViolationTimeNS = ev.violations(), ev.count, ev.omitted, ev.first
	if d.OKUpdates == 0 {
		d.Note = "no update answered ok"
	}
	switch {
	case ev.count > 0:
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d acknowledged config updates were no compare-and-set; first: %s", ev.count, d.Violations[0].Message)}
	case d.Unjudged > 0:
		return checker.Result{Valid: checker.Unknown, Details: d,
			Error: fmt.Sprintf("%d ok updates lack their new version or the version they read: cannot judge them", d.Unjudged)}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// chain judges one key's ok updates (each with a version and an expected
// version).
func chain(ups []lockview.Op, limit int, ev *evidence[CASViolation]) {
	slices.SortStableFunc(ups, func(a, b lockview.Op) int {
		return cmp.Or(cmp.Compare(*a.Value.Version, *b.Value.Version), cmp.Compare(a.Done, b.Done))
	})
	for i, o := range ups {
		ver, exp := *o.Value.Version, *expectedOf(o)
		if ver != exp+1 {
			c := casViolation(KindBlindWrite, o)
			c.Message = fmt.Sprintf("process %d's update of %q read version %d but produced version %d (answered at %s): it overwrote a version it never read",
				c.Process, c.Key, exp, ver, checker.Seconds(o.Done))
			ev.add(limit, c, o.Done)
		}
		if i > 0 && *ups[i-1].Value.Version == ver {
			prev := ups[i-1]
			c := casViolation(KindDuplicateVersion, o)
			c.OtherProcess, c.OtherOKNS = history.Int(int(prev.Process)), history.Int64(prev.Done)
			c.Message = fmt.Sprintf("process %d's update of %q produced version %d (answered at %s), as process %d's did (answered at %s): one of them was lost",
				c.Process, c.Key, ver, checker.Seconds(o.Done), prev.Process, checker.Seconds(prev.Done))
			ev.add(limit, c, max(o.Done, prev.Done))
		}
	}
}

func casViolation(kind string, o lockview.Op) CASViolation {
	return CASViolation{Kind: kind, Process: int(o.Process), Key: o.Key, Version: *o.Value.Version,
		Expected: expectedOf(o), InvokedNS: o.Invoke, OKNS: o.Done, Index: o.Index}
}

// expectedOf is the version an update was based on: its invocation's
// argument, else what its completion echoes.
func expectedOf(o lockview.Op) *int64 {
	if o.Invoked != nil && o.Invoked.Expected != nil {
		return o.Invoked.Expected
	}
	if o.Value != nil {
		return o.Value.Expected
	}
	return nil
}
