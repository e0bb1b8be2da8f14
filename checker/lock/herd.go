package lock

import (
	"context"
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"

	"github.com/zkchaos/zkchaos/history"
)

// NameHerd is the herd-effect checker.
const NameHerd = "herd"

// HerdKey is the herd measurement of one key.
type HerdKey struct {
	Handoffs int `json:"handoffs"`
	// MeanWaiters is the mean number of other acquires waiting on the key
	// at each grant.
	MeanWaiters float64 `json:"mean_waiters"`
}

// HerdDetails is the evidence of the herd checker.
type HerdDetails struct {
	// Wakeups is the sum over worker processes of the last wake-up count
	// each reported; Handoffs is the number of grants.
	Wakeups  int64 `json:"wakeups"`
	Handoffs int   `json:"handoffs"`
	// WakeupsPerHandoff is about 1 or less for a recipe that watches its
	// predecessor (only the next in line wakes), and about MeanWaiters+1
	// for one that makes every waiter watch the same node.
	WakeupsPerHandoff float64            `json:"wakeups_per_handoff"`
	MeanWaiters       float64            `json:"mean_waiters"`
	Keys              map[string]HerdKey `json:"keys"`
	Reason            string             `json:"reason,omitempty"`
}

// CheckHerd measures the herd effect (seed 000 sections 5 and 23): watch
// wake-ups per lock hand-off, next to how many waiters there were. It is
// invalid when the wake-ups per hand-off are well above one and grow with
// the waiters, which is every waiter being woken by every release. It
// needs the wake-up counts workers report with their acquire answers
// (worker protocol field "wakeups"); without them it is unknown.
func CheckHerd(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	d := HerdDetails{Keys: map[string]HerdKey{}}
	last := map[history.Process]int64{}
	reported := false
	type grantAt struct {
		t int64
		p history.Process
	}
	grants := map[string][]grantAt{}
	for _, o := range v.Ops {
		if o.F != history.FAcquire {
			continue
		}
		if o.Value != nil && o.Value.Wakeups != nil {
			reported = true
			last[o.Process] = max(last[o.Process], *o.Value.Wakeups)
		}
		if o.Type == history.OK {
			grants[o.Key] = append(grants[o.Key], grantAt{o.Done, o.Process})
		}
	}
	for _, e := range v.Instants {
		if e.F == history.FLate && e.Value != nil && e.Value.Wakeups != nil {
			last[e.Process] = max(last[e.Process], *e.Value.Wakeups)
		}
	}
	if !reported {
		d.Reason = "no wake-up counts in the history: the subject does not report them"
		return checker.Result{Valid: checker.Unknown, Error: d.Reason, Details: d}
	}
	for _, n := range last {
		d.Wakeups += n
	}
	var waitersSum int
	for k, gs := range grants {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		sum := 0
		for _, g := range gs {
			for _, o := range v.Ops {
				if o.F == history.FAcquire && o.Key == k && o.Process != g.p && o.Invoke <= g.t && (o.Type == "" || o.Done > g.t) {
					sum++
				}
			}
		}
		hk := HerdKey{Handoffs: len(gs)}
		if len(gs) > 0 {
			hk.MeanWaiters = float64(sum) / float64(len(gs))
		}
		d.Keys[k] = hk
		d.Handoffs += len(gs)
		waitersSum += sum
	}
	if d.Handoffs == 0 {
		d.Reason = "no grants"
		return checker.Result{Valid: checker.Unknown, Error: d.Reason, Details: d}
	}
	d.WakeupsPerHandoff = float64(d.Wakeups) / float64(d.Handoffs)
	d.MeanWaiters = float64(waitersSum) / float64(d.Handoffs)
	if d.WakeupsPerHandoff > 1.5 && d.WakeupsPerHandoff > 0.5*(d.MeanWaiters+1) {
		return checker.Result{Valid: checker.Invalid, Error: fmt.Sprintf("herd effect: %.2f watch wake-ups per hand-off with %.2f other waiters on average (a predecessor watch wakes about one)",
			d.WakeupsPerHandoff, d.MeanWaiters), Details: d}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}
