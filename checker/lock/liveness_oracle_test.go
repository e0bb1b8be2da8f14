package lock

// The liveness checker as it was before it was made n log n
// (docs/measurements.md "Checker speed"): every fault window tested
// against every operation of a key, and every fault window clipped for
// each stretch measured. Kept, unchanged but for its names, as the
// reference oracle of TestLivenessMatchesOracle.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"

	"github.com/zkchaos/zkchaos/history"
)

// oracleLiveness is the former CheckLiveness.
func oracleLiveness(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	d := LivenessDetails{Stalls: []Stall{}}
	acqT := inferAcquireTimeout(v.Ops)
	freeT := max(2*time.Second, acqT*2/5)
	droughtT := max(5*time.Second, 3*acqT)
	d.AcquireTimeoutMS = ms(acqT)
	d.FreeThresholdMS, d.DroughtThresholdMS = ms(freeT), ms(droughtT)
	if !slices.ContainsFunc(v.Ops, func(o lockview.Op) bool { return o.F == history.FAcquire }) {
		d.Note = "no acquires in the history"
		return checker.Result{Valid: checker.Valid, Details: d}
	}
	d.ExcusedFaults = len(v.Faults)
	byKey := map[string][]lockview.Op{}
	for _, o := range v.Ops {
		if o.Key != "" {
			byKey[o.Key] = append(byKey[o.Key], o)
		}
	}
	lost := map[string][]lockview.Instant{}
	for _, e := range v.Instants {
		if e.F == history.FLost {
			lost[e.Key] = append(lost[e.Key], e)
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	for _, k := range keys {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		ex := oracleExcused(v.Faults, byKey[k])
		d.Stalls = append(d.Stalls, oracleFreeStalls(k, byKey[k], lost[k], v.End, ex, freeT)...)
		d.Stalls = append(d.Stalls, oracleDroughts(k, byKey[k], v.End, ex, droughtT)...)
	}
	if len(d.Stalls) > 0 {
		// A stall becomes a violation once it has lasted its threshold.
		for _, st := range d.Stalls {
			th := freeT
			if st.Kind == StallNoAcquisition {
				th = droughtT
			}
			d.FirstViolationTimeNS = checker.Earliest(d.FirstViolationTimeNS, st.FromNS+int64(th))
		}
		first := d.Stalls[0]
		for _, st := range d.Stalls {
			if st.FromNS < first.FromNS {
				first = st
			}
		}
		return checker.Result{Valid: checker.Invalid, Details: d,
			Error: fmt.Sprintf("%d stalls (the lock was not handed on), first: %s", len(d.Stalls), first.Message)}
	}
	return checker.Result{Valid: checker.Valid, Details: d}
}

// excused are the fault windows (with grace) that count for a key: every
// ensemble fault, and client faults whose target used the key meanwhile.
func oracleExcused(faults []checker.FaultWindow, ops []lockview.Op) []span {
	var out []span
	for _, f := range faults {
		if f.Process < 0 {
			out = append(out, span{f.From, f.To + int64(ensembleFaultGrace)})
			continue
		}
		to := f.To + int64(clientFaultGrace)
		for _, o := range ops {
			done := o.Done
			if o.Type == "" {
				done = to
			}
			if o.Process == f.Process && o.Invoke <= to && done >= f.From {
				out = append(out, span{f.From, to})
				break
			}
		}
	}
	return out
}

// counted is how much of [from, to] lies outside every excused span.
func oracleCounted(from, to int64, ex []span) int64 {
	var cut []span
	for _, s := range ex {
		a, b := max(s.from, from), min(s.to, to)
		if a < b {
			cut = append(cut, span{a, b})
		}
	}
	sort.Slice(cut, func(i, j int) bool { return cut[i].from < cut[j].from })
	total, cur := to-from, from
	for _, s := range cut {
		if s.to <= cur {
			continue
		}
		total -= s.to - max(s.from, cur)
		cur = s.to
	}
	return total
}

// freeStalls replays one key: holders come and go, waiters wait; every
// stretch where the key is free while someone waits is measured.
func oracleFreeStalls(key string, ops []lockview.Op, lost []lockview.Instant, end int64, ex []span, limit time.Duration) []Stall {
	type ev struct {
		t    int64
		rank int // at equal times: completions before invocations
		f    func()
	}
	holders := map[history.Process]bool{} // true: a ghost (outcome unknown)
	waiting := map[history.Process]bool{}
	var evs []ev
	for _, o := range ops {
		o := o
		switch o.F {
		case history.FAcquire:
			evs = append(evs, ev{o.Invoke, 1, func() { waiting[o.Process] = true }})
			done := o.Done
			if o.Type == "" {
				done = end
			}
			evs = append(evs, ev{done, 0, func() {
				delete(waiting, o.Process)
				switch o.Type {
				case history.OK:
					// A grant ends every ghost: ZooKeeper handed the lock on.
					for p, ghost := range holders {
						if ghost {
							delete(holders, p)
						}
					}
					holders[o.Process] = false
				case history.Info, "":
					holders[o.Process] = true // it may hold the lock
				}
			}})
		default:
			if o.Type == "" || o.Type == history.Info {
				evs = append(evs, ev{o.Done, 0, func() {
					if _, ok := holders[o.Process]; ok {
						holders[o.Process] = true
					}
				}})
			} else if o.F == history.FRelease {
				evs = append(evs, ev{o.Done, 0, func() { delete(holders, o.Process) }})
			}
		}
	}
	for _, l := range lost {
		evs = append(evs, ev{l.Time, 0, func() { delete(holders, l.Process) }})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].rank < evs[j].rank
	})
	var out []Stall
	var from int64 = -1
	stuck := map[history.Process]bool{}
	flush := func(t int64) {
		if from < 0 {
			return
		}
		if c := oracleCounted(from, t, ex); c > int64(limit) {
			out = append(out, Stall{Kind: StallFreeWithWaiters, Key: key, FromNS: from, ToNS: t, CountedMS: float64(c) / 1e6,
				Processes: sortedProcs(stuck),
				Message: fmt.Sprintf("%s was free for %.1fs (%.1fs outside fault windows) while processes %v waited for it",
					key, float64(t-from)/1e9, float64(c)/1e9, sortedProcs(stuck))})
		}
		from = -1
		clear(stuck)
	}
	for _, e := range evs {
		e.f()
		stalled := len(holders) == 0 && len(waiting) > 0
		switch {
		case stalled && from < 0:
			from = e.t
		case !stalled && from >= 0:
			flush(e.t)
		}
		if from >= 0 {
			for p := range waiting {
				stuck[p] = true
			}
		}
	}
	flush(end)
	return out
}

// droughts finds long stretches without a grant of key during which
// acquires on it timed out.
func oracleDroughts(key string, ops []lockview.Op, end int64, ex []span, limit time.Duration) []Stall {
	var grants []int64
	first := int64(-1)
	for _, o := range ops {
		if o.F != history.FAcquire {
			continue
		}
		if first < 0 || o.Invoke < first {
			first = o.Invoke
		}
		if o.Type == history.OK {
			grants = append(grants, o.Done)
		}
	}
	if first < 0 {
		return nil
	}
	slices.Sort(grants)
	bounds := append(append([]int64{first}, grants...), end)
	var out []Stall
	for i := 0; i+1 < len(bounds); i++ {
		from, to := bounds[i], bounds[i+1]
		c := oracleCounted(from, to, ex)
		if c <= int64(limit) {
			continue
		}
		failed := map[history.Process]bool{}
		n := 0
		for _, o := range ops {
			if o.F == history.FAcquire && o.Type != history.OK && o.Invoke >= from && o.Done <= to && o.Type != "" {
				failed[o.Process] = true
				n++
			}
		}
		if n < 2 {
			continue // nobody was kept waiting: the key was simply not asked for
		}
		out = append(out, Stall{Kind: StallNoAcquisition, Key: key, FromNS: from, ToNS: to, CountedMS: float64(c) / 1e6,
			Processes: sortedProcs(failed),
			Message: fmt.Sprintf("no grant of %s for %.1fs (%.1fs outside fault windows) while %d acquires by processes %v failed",
				key, float64(to-from)/1e9, float64(c)/1e9, n, sortedProcs(failed))})
	}
	return out
}
