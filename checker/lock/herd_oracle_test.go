package lock

// The herd checker as it was before it was made n log n
// (docs/measurements.md "Checker speed"), with its per-grant waiter count
// written out as a loop over every acquire: each answer's window scanned
// answer by answer, which a running count (a huge number of wake-ups)
// makes quadratic. The reference oracle of TestHerdMatchesOracle.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

func oracleHerdOf(ctx context.Context, in checker.Input, enter, leave string) checker.Result {
	v := lockview.Of(in.History)
	d := HerdDetails{Keys: map[string]HerdKey{}, Threshold: HerdThreshold}
	keys, byKey := oracleWakeupsByKey(v, enter)
	var waitersSum int
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		hk := keys[k]
		if hk == nil {
			hk = &HerdKey{}
			keys[k] = hk
		}
		var sum int
		hk.Handoffs, sum = oracleWaiters(byKey[k])
		if hk.Handoffs > 0 {
			hk.MeanWaiters = float64(sum) / float64(hk.Handoffs)
		}
		d.Handoffs += hk.Handoffs
		waitersSum += sum
	}
	for k, hk := range keys {
		d.Keys[k] = *hk
		d.Wakeups += hk.Wakeups
		d.Acquires += hk.Acquires
	}
	if d.Acquires == 0 {
		d.Reason = "no wake-up counts in the history: the subject does not report them"
		return checker.Result{Valid: checker.Unknown, Error: d.Reason, Details: d}
	}
	d.Implausible = oracleImplausible(byKey, v.Ops, enter, leave)
	if d.Implausible > max(2, d.Acquires/10) {
		d.Reason = fmt.Sprintf("%d of %d acquire answers report more wake-ups than the queue could cause during them: the subject counts something else than wake-ups per acquire (a running count?), see docs/worker-protocol.md",
			d.Implausible, d.Acquires)
		return checker.Result{Valid: checker.Unknown, Error: d.Reason, Details: d}
	}
	d.WakeupsPerAcquire = float64(d.Wakeups) / float64(d.Acquires)
	if d.Handoffs > 0 {
		d.WakeupsPerHandoff = float64(d.Wakeups) / float64(d.Handoffs)
		d.MeanWaiters = float64(waitersSum) / float64(d.Handoffs)
	}
	if d.WakeupsPerAcquire > HerdThreshold && d.WakeupsPerAcquire > (d.MeanWaiters+1)/2 {
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("herd effect: %.2f watch wake-ups per %s (over %.0f) with %.2f other waiters at each grant on average (a predecessor watch wakes at most about one per %[2]s)",
				d.WakeupsPerAcquire, enter, HerdThreshold, d.MeanWaiters)}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// oracleWakeupsByKey sums the wake-ups acquire answers (ok, fail, a
// worker's info, late) reported per key, and lists each key's acquires.
func oracleWakeupsByKey(v lockview.View, enter string) (map[string]*HerdKey, map[string][]lockview.Op) {
	keys := map[string]*HerdKey{}
	count := func(k string, w *int64) {
		if w == nil {
			return
		}
		if keys[k] == nil {
			keys[k] = &HerdKey{}
		}
		keys[k].Wakeups += *w
		keys[k].Acquires++
	}
	byKey := map[string][]lockview.Op{}
	for _, o := range v.Ops {
		if o.F != enter {
			continue
		}
		byKey[o.Key] = append(byKey[o.Key], o)
		if o.Value != nil && o.Type != "" {
			count(o.Key, o.Value.Wakeups)
		}
	}
	for _, e := range v.Instants {
		if e.F == history.FLate && e.Value != nil && e.Value.Of == enter {
			count(e.Key, e.Value.Wakeups)
		}
	}
	return keys, byKey
}

// oracleWaiters counts a key's grants and, summed over them, the other
// acquires of the key open at each grant (invoked by then, not answered
// by then: the acquires invoked by then less those answered by then),
// every acquire looked at for every grant.
func oracleWaiters(acqs []lockview.Op) (grants, sum int) {
	for _, g := range acqs {
		if g.Type != history.OK {
			continue
		}
		grants++
		for _, o := range acqs {
			if o.Invoke <= g.Done {
				sum++
			}
			if o.Type != "" && o.Done <= g.Done {
				sum--
			}
		}
	}
	return grants, sum
}

// oracleImplausible counts the acquire answers whose wake-ups
// exceed, by more than 2, the other processes' acquire and release
// answers on the key during the acquire: every wake-up needs a queue
// node deleted meanwhile, and every deletion is a release, an abandoned
// or failed acquire, or a lost session, each answered around it (the
// slack covers answers recorded just after the deletion they follow).
func oracleImplausible(byKey map[string][]lockview.Op, ops []lockview.Op, enter, leave string) int {
	type done struct {
		t int64
		p history.Process
	}
	dones := map[string][]done{}
	for _, o := range ops {
		if o.Type != "" && (o.F == enter || o.F == leave) {
			dones[o.Key] = append(dones[o.Key], done{o.Done, o.Process})
		}
	}
	n := 0
	for k, acqs := range byKey {
		ds := dones[k]
		slices.SortFunc(ds, func(a, b done) int { return cmp.Compare(a.t, b.t) })
		for _, a := range acqs {
			if a.Value == nil || a.Value.Wakeups == nil || a.Type == "" {
				continue
			}
			w := *a.Value.Wakeups
			others := int64(0)
			for i := sort.Search(len(ds), func(i int) bool { return ds[i].t >= a.Invoke }); i < len(ds) && ds[i].t <= a.Done && others <= w; i++ {
				if ds[i].p != a.Process {
					others++
				}
			}
			if w > others+2 {
				n++
			}
		}
	}
	return n
}
