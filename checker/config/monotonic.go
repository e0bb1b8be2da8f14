package config

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stream"
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
// afresh. It is a MonotonicStream fed the whole history.
func CheckMonotonic(ctx context.Context, in checker.Input) checker.Result {
	s := NewMonotonicStream(in.Limit(), !indexesGrow(in.History))
	if err := lockview.Feed(ctx, in.History, s.Add); err != nil {
		return checker.Cancelled(ctx)
	}
	s.Finish()
	d := s.Result()
	if d.ViolationCount == 0 {
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	return checker.Result{Valid: checker.Invalid, Details: d,
		Error: fmt.Sprintf("%d times a client applied an older config version than one it had applied; first: %s", d.ViolationCount, d.Violations[0].Message)}
}

// indexesGrow says whether h's indexes grow in file order, as a
// recorder writes them: the rule's "history order" is the indexes'.
func indexesGrow(h []history.Event) bool {
	for i := 1; i < len(h); i++ {
		if h[i].Index <= h[i-1].Index {
			return false
		}
	}
	return true
}

// MonotonicStream is config-monotonic fed the history one paired event at
// a time: a version applied is judged at once against the highest its
// process applied to the key (the rule reads nothing later). Memory: per
// client process and key, its highest version, and the first limit
// regressions. In deferred mode (a file whose indexes do not grow) the
// versions are judged at Finish, in the order of their indexes.
type MonotonicStream struct {
	limit       int
	deferred    bool
	pending     []applied
	clients     map[client]bool
	highest     map[client]applied
	applied     int
	unversioned int
	ev          evidence[Regression]
}

var _ stream.Checker[*lockview.Item, stream.Found] = (*MonotonicStream)(nil)

// NewMonotonicStream keeps the first limit regressions as evidence;
// deferred judges at Finish.
func NewMonotonicStream(limit int, deferred bool) *MonotonicStream {
	return &MonotonicStream{limit: limit, deferred: deferred, clients: map[client]bool{}, highest: map[client]applied{}}
}

// Name implements stream.Checker.
func (s *MonotonicStream) Name() string { return NameMonotonic }

// Add implements stream.Checker: the regression the item's version makes.
func (s *MonotonicStream) Add(it *lockview.Item) []stream.Found {
	var a applied
	var val *history.Value
	switch {
	case it.Kind == lockview.ItemInvoke && it.Op.F == history.FWatch:
		s.clients[client{it.Op.Process, it.Op.Key}] = true
		return nil
	case it.Kind == lockview.ItemDone && it.Op.F == history.FWatch && it.Op.Type == history.OK:
		o := it.Op
		a, val = applied{Process: o.Process, Key: o.Key, F: o.F, Time: o.Done, Index: o.Index}, o.Value
	case it.Kind == lockview.ItemInstant && it.Instant.F == history.FApplied:
		e := it.Instant
		s.clients[client{e.Process, e.Key}] = true
		a, val = applied{Process: e.Process, Key: e.Key, F: e.F, Time: e.Time, Index: e.Index}, e.Value
	default:
		return nil
	}
	if val == nil || val.Version == nil {
		s.unversioned++
		return nil
	}
	a.Version, a.Digest = *val.Version, val.Digest
	s.applied++
	if s.deferred {
		s.pending = append(s.pending, a)
		return nil
	}
	return s.judge(a)
}

// Finish judges what deferred mode kept, in the order of the indexes.
func (s *MonotonicStream) Finish() []stream.Found {
	slices.SortStableFunc(s.pending, func(a, b applied) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Time, b.Time))
	})
	var found []stream.Found
	for _, a := range s.pending {
		found = append(found, s.judge(a)...)
	}
	s.pending = nil
	return found
}

// judge compares a version applied with the highest its process applied
// to the key before.
func (s *MonotonicStream) judge(a applied) []stream.Found {
	k := client{a.Process, a.Key}
	h, seen := s.highest[k]
	if !seen || a.Version > h.Version {
		s.highest[k] = a
		return nil
	}
	if a.Version == h.Version {
		return nil
	}
	r := regression(h, a)
	s.ev.add(s.limit, r, a.Time)
	return []stream.Found{{Key: a.Key, TimeNS: a.Time, Message: r.Message}}
}

// Result is the evidence so far.
func (s *MonotonicStream) Result() MonotonicDetails {
	d := MonotonicDetails{Clients: len(s.clients), Applied: s.applied, Unversioned: s.unversioned}
	d.Violations, d.ViolationCount, d.ViolationsOmitted, d.FirstViolationTimeNS = s.ev.violations(), s.ev.count, s.ev.omitted, s.ev.first
	if d.Applied == 0 {
		d.Note = "no client applied a version"
	}
	return d
}

func regression(h, a applied) Regression {
	r := Regression{Process: int(a.Process), Key: a.Key, EarlierVersion: h.Version, EarlierNS: h.Time,
		LaterVersion: a.Version, LaterNS: a.Time, Index: a.Index}
	r.Message = fmt.Sprintf("process %d applied version %d of %q at %s after version %d at %s",
		r.Process, r.LaterVersion, r.Key, checker.Seconds(r.LaterNS), r.EarlierVersion, checker.Seconds(r.EarlierNS))
	return r
}
