package config

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// Regression is a client that applied an older version of a config after
// a newer one.
type Regression struct {
	Process int    `json:"process"`
	Key     string `json:"key"`
	// EarlierVersion is the highest version the process had applied, at
	// EarlierNS; LaterVersion the lower one it applied after, at LaterNS.
	EarlierVersion int64  `json:"earlier_version"`
	EarlierNS      int64  `json:"earlier_ns"`
	LaterVersion   int64  `json:"later_version"`
	LaterNS        int64  `json:"later_ns"`
	Index          int64  `json:"index"`
	Message        string `json:"message"`
}

// MonotonicDetails is the evidence of config-monotonic.
type MonotonicDetails struct {
	// Clients counts client processes per key they watched.
	Clients int `json:"clients"`
	Applied int `json:"applied"`
	// Unversioned counts watch oks and applied events without a version.
	Unversioned          int          `json:"unversioned,omitempty"`
	Violations           []Regression `json:"violations"`
	ViolationCount       int          `json:"violation_count"`
	ViolationsOmitted    int          `json:"violations_omitted,omitempty"`
	FirstViolationTimeNS *int64       `json:"first_violation_time_ns,omitempty"`
	Note                 string       `json:"note,omitempty"`
}

// CheckMonotonic finds a client that went back: ZooKeeper serves a
// client from a server at least as recent as any it saw before (its
// session's zxid), so the versions one client process applies, its
// watch's first and every applied event in history order, never
// decrease. An equal version is allowed (a notification may re-read the
// same data). A retired client's successor is a new process and starts
// afresh.
func CheckMonotonic(ctx context.Context, in checker.Input) checker.Result {
	v := viewOf(in.History)
	d := MonotonicDetails{Clients: len(v.clients), Applied: len(v.applies), Unversioned: v.unversioned}
	type pk struct {
		p   history.Process
		key string
	}
	highest := map[pk]applied{}
	var ev evidence[Regression]
	for i, a := range v.applies {
		if i&0xffff == 0 && ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		k := pk{a.Process, a.Key}
		h, seen := highest[k]
		if !seen || a.Version > h.Version {
			highest[k] = a
			continue
		}
		if a.Version < h.Version {
			ev.add(in.Limit(), regression(h, a), a.Time)
		}
	}
	d.Violations, d.ViolationCount, d.ViolationsOmitted, d.FirstViolationTimeNS = ev.violations(), ev.count, ev.omitted, ev.first
	if d.Applied == 0 {
		d.Note = "no client applied a version"
	}
	if ev.count == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d times a client applied an older config version than one it had applied; first: %s", ev.count, d.Violations[0].Message)}
}

func regression(h, a applied) Regression {
	r := Regression{Process: int(a.Process), Key: a.Key, EarlierVersion: h.Version, EarlierNS: h.Time,
		LaterVersion: a.Version, LaterNS: a.Time, Index: a.Index}
	r.Message = fmt.Sprintf("process %d applied version %d of %q at %s after version %d at %s",
		r.Process, r.LaterVersion, r.Key, checker.Seconds(r.LaterNS), r.EarlierVersion, checker.Seconds(r.EarlierNS))
	return r
}
