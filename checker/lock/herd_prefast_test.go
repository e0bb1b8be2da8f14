package lock

// The herd checker as it was before its keys were numbered instead of
// looked up by name per operation (docs/architecture.md, "Checker
// speed"): kept, unchanged but for its names, as the byte-for-byte
// oracle of TestHerdMatchesPrefast.

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

// prefastHerdOf is the former herdOf.
func prefastHerdOf(ctx context.Context, in checker.Input, enter, leave string) checker.Result {
	v := lockview.Of(in.History)
	d := HerdDetails{Keys: map[string]HerdKey{}, Threshold: HerdThreshold}
	keys, byKey := pfWakeupsByKey(v, enter)
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
		hk.Handoffs, sum = pfWaiters(byKey[k])
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
	d.Implausible = pfImplausible(byKey, v.Ops, enter, leave)
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

// pfWakeupsByKey sums the wake-ups acquire answers (ok, fail, a worker's
// info, late) reported per key, and lists each key's acquires.
func pfWakeupsByKey(v lockview.View, enter string) (map[string]*HerdKey, map[string][]lockview.Op) {
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

// pfWaiters counts a key's grants and, summed over them, the other acquires
// of the key open at each grant (invoked by then, not answered by then).
func pfWaiters(acqs []lockview.Op) (grants, sum int) {
	invokes := make([]int64, 0, len(acqs))
	dones := make([]int64, 0, len(acqs))
	for _, o := range acqs {
		invokes = append(invokes, o.Invoke)
		if o.Type != "" {
			dones = append(dones, o.Done)
		}
	}
	slices.Sort(invokes)
	slices.Sort(dones)
	for _, o := range acqs {
		if o.Type != history.OK {
			continue
		}
		grants++
		t := o.Done
		invoked := sort.Search(len(invokes), func(i int) bool { return invokes[i] > t })
		answered := sort.Search(len(dones), func(i int) bool { return dones[i] > t })
		sum += invoked - answered
	}
	return grants, sum
}

// pfImplausible counts the acquire answers whose wake-ups
// exceed, by more than 2, the other processes' acquire and release
// answers on the key during the acquire: every wake-up needs a queue
// node deleted meanwhile, and every deletion is a release, an abandoned
// or failed acquire, or a lost session, each answered around it (the
// slack covers answers recorded just after the deletion they follow).
// The answers during an acquire are counted by binary search, all of the
// key's less the acquiring process's own, not one by one.
func pfImplausible(byKey map[string][]lockview.Op, ops []lockview.Op, enter, leave string) int {
	type pk struct {
		p   history.Process
		key string
	}
	all, own := map[string][]int64{}, map[pk][]int64{}
	for _, o := range ops {
		if o.Type != "" && (o.F == enter || o.F == leave) {
			all[o.Key] = append(all[o.Key], o.Done)
			own[pk{o.Process, o.Key}] = append(own[pk{o.Process, o.Key}], o.Done)
		}
	}
	for _, ts := range all {
		slices.Sort(ts)
	}
	for _, ts := range own {
		slices.Sort(ts)
	}
	n := 0
	for k, acqs := range byKey {
		for _, a := range acqs {
			if a.Value == nil || a.Value.Wakeups == nil || a.Type == "" {
				continue
			}
			others := pfWithin(all[k], a.Invoke, a.Done) - pfWithin(own[pk{a.Process, k}], a.Invoke, a.Done)
			if *a.Value.Wakeups > others+2 {
				n++
			}
		}
	}
	return n
}

// pfWithin counts the sorted times ts in [from, to].
func pfWithin(ts []int64, from, to int64) int64 {
	lo, _ := slices.BinarySearch(ts, from)
	hi := sort.Search(len(ts), func(i int) bool { return ts[i] > to })
	return int64(max(0, hi-lo))
}
