package lock

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

// NameHerd is the herd-effect checker.
const NameHerd = "herd"

// HerdThreshold is the wake-ups per acquire above which a recipe may be
// herding (see CheckHerd for why 2).
const HerdThreshold = 2.0

// HerdKey is the herd measurement of one key.
type HerdKey struct {
	Handoffs int `json:"handoffs"`
	// MeanWaiters is the mean number of other acquires waiting on the key
	// at each grant.
	MeanWaiters float64 `json:"mean_waiters"`
	// Wakeups is the sum of the wake-ups the key's acquires reported;
	// Acquires is how many reported.
	Wakeups  int64 `json:"wakeups"`
	Acquires int   `json:"acquires"`
}

// HerdDetails is the evidence of the herd checker.
type HerdDetails struct {
	// Wakeups is the sum of the wake-ups every acquire answer reported
	// (each counts the wake-ups during that acquire); Acquires is the
	// number of acquire answers (ok, fail, a worker's info, or late) that
	// reported one.
	Wakeups  int64 `json:"wakeups"`
	Acquires int   `json:"acquires"`
	// WakeupsPerAcquire is the measure judged: at most about 1 for a
	// recipe that watches its predecessor, about MeanWaiters for one that
	// makes every waiter watch the same node.
	WakeupsPerAcquire float64 `json:"wakeups_per_acquire"`
	Threshold         float64 `json:"threshold"`
	// Handoffs is the number of grants; WakeupsPerHandoff is shown for
	// comparison with earlier results (it was the measure before wake-ups
	// were counted per acquire).
	Handoffs          int                `json:"handoffs"`
	WakeupsPerHandoff float64            `json:"wakeups_per_handoff"`
	MeanWaiters       float64            `json:"mean_waiters"`
	Keys              map[string]HerdKey `json:"keys"`
	// Implausible counts the acquire answers that report more wake-ups
	// than the queue could have caused during them (more than 2 above the
	// other processes' acquires and releases of the key answered
	// meanwhile): a running count, not a count per acquire.
	Implausible int    `json:"implausible"`
	Reason      string `json:"reason,omitempty"`
}

// CheckHerd measures the herd effect: every waiter woken by every
// release, a read storm on ZooKeeper that grows with the queue.
//
// A wake-up (docs/worker-protocol.md) is a watch notification that, during
// one acquire, woke that acquire's wait and made the lock code examine the
// queue again; an acquire's answer (ok or fail) carries the number of its
// own wake-ups. Watches left by earlier, finished acquires that fire later
// are not counted, nor are session events.
//
// Formula: R = sum of the wake-ups reported / number of acquire answers
// that reported them. Why it is at most about 1 for a correct recipe:
// every acquire creates exactly one queue node and that node is deleted
// exactly once (released, abandoned on timeout, or with its session), and
// a recipe that watches its immediate predecessor has one waiter per node
// at most, so each deletion wakes at most one acquire: wake-ups <=
// deletions = acquires, with acquire timeouts too (a timed-out waiter's
// deletion wakes only its successor). A recipe that makes every waiter
// watch the head wakes every waiter at each hand-off, so R is about the
// number of waiters, MeanWaiters (other acquires open at each grant).
//
// Verdict: invalid when R > HerdThreshold and R > (MeanWaiters+1)/2. The
// threshold, 2, is twice the most a correct recipe reaches (room for a
// node re-created after a lost connection, or a watch that fires for
// something else); the second condition asks that the wake-ups grow with
// the queue, which is what a herd is (2.5 wake-ups per acquire with seven
// waiters is odd, but a herd would wake about all seven). Without wake-up
// counts it is unknown, and so it is when more than a tenth of the
// answers (and more than 2) report more wake-ups than the queue could
// cause during them (see implausible): a worker still reporting the
// running count of the old protocol, which this formula would read as a
// herd. Measured on real runs whose running counts were turned into
// differences between a process's answers (an upper bound of the count
// per acquire): seed with one key and a 300 ms acquire timeout 0.76
// (1.51 per hand-off by the old rule), the herd recipe 4.94.
func CheckHerd(ctx context.Context, in checker.Input) checker.Result {
	return herdOf(ctx, in, history.FAcquire, history.FRelease)
}

// HerdOf is CheckHerd for a workload whose queue is entered with verb
// enter and left with leave (the election's campaign and resign: a
// candidate's campaign is its lock's acquire).
func HerdOf(enter, leave string) func(context.Context, checker.Input) checker.Result {
	return func(ctx context.Context, in checker.Input) checker.Result { return herdOf(ctx, in, enter, leave) }
}

func herdOf(ctx context.Context, in checker.Input, enter, leave string) checker.Result {
	v := lockview.Of(in.History)
	d := HerdDetails{Keys: map[string]HerdKey{}, Threshold: HerdThreshold}
	ix := indexOps(v.Ops, func(o *lockview.Op) bool { return o.F == enter || o.F == leave },
		func(o *lockview.Op, pid int32) herdOp { return herdOp{o, pid} })
	var waitersSum, implausibleSum int
	for _, k := range slices.Sorted(maps.Keys(ix.byKey)) {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		hk, sum, implausible, ok := herdKey(ix.byKey[k], len(ix.procs.list), enter)
		if !ok {
			continue // only leaves: not a key the herd measures
		}
		d.Keys[k] = hk
		waitersSum += sum
		implausibleSum += implausible
	}
	for _, e := range v.Instants {
		if e.F == history.FLate && e.Value != nil && e.Value.Of == enter && e.Value.Wakeups != nil {
			hk := d.Keys[e.Key]
			hk.Wakeups += *e.Value.Wakeups
			hk.Acquires++
			d.Keys[e.Key] = hk
		}
	}
	for _, hk := range d.Keys {
		d.Handoffs += hk.Handoffs
		d.Wakeups += hk.Wakeups
		d.Acquires += hk.Acquires
	}
	if d.Acquires == 0 {
		d.Reason = "no wake-up counts in the history: the subject does not report them"
		return checker.Result{Valid: checker.Unknown, Error: d.Reason, Details: d}
	}
	d.Implausible = implausibleSum
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

// herdOp is an enter or leave of a key, with its process's number.
type herdOp struct {
	op  *lockview.Op
	pid int32
}

// herdKey measures one key from its enter and leave operations: the
// wake-ups its enter answers (ok, fail, a worker's info) reported, its
// grants with the other enters open at each (sum), and how many answers
// are implausible. ok is false for a key without enters.
func herdKey(ops []herdOp, procs int, enter string) (hk HerdKey, sum, implausible int, ok bool) {
	// enterRec is what the measure reads of an enter, copied once: a
	// value is a pointer away, and reading it twice per enter cost more
	// than the rest.
	type enterRec struct {
		invoke, done, wakeups int64
		pid                   int32
		granted, reported     bool
	}
	n := len(ops)
	enters := make([]enterRec, 0, n)
	invokes, dones := make([]int64, 0, n), make([]int64, 0, n)
	answered := make([]int64, 0, n) // enters and leaves answered
	own := make([][]int64, procs)
	for _, ho := range ops {
		o := ho.op
		if o.Type != "" {
			answered = append(answered, o.Done)
			own[ho.pid] = append(own[ho.pid], o.Done)
		}
		if o.F != enter {
			continue
		}
		r := enterRec{invoke: o.Invoke, done: o.Done, pid: ho.pid, granted: o.Type == history.OK}
		invokes = append(invokes, o.Invoke)
		if o.Type != "" {
			dones = append(dones, o.Done)
			if o.Value != nil && o.Value.Wakeups != nil {
				r.wakeups, r.reported = *o.Value.Wakeups, true
				hk.Wakeups += r.wakeups
				hk.Acquires++
			}
		}
		enters = append(enters, r)
	}
	if len(enters) == 0 {
		return hk, 0, 0, false
	}
	sortIfNot(invokes)
	sortIfNot(dones)
	sortIfNot(answered)
	for _, ts := range own {
		sortIfNot(ts)
	}
	for _, r := range enters {
		if r.granted {
			hk.Handoffs++
			invoked := sort.Search(len(invokes), func(i int) bool { return invokes[i] > r.done })
			closed := sort.Search(len(dones), func(i int) bool { return dones[i] > r.done })
			sum += invoked - closed
		}
		if r.reported && r.wakeups > within(answered, r.invoke, r.done)-within(own[r.pid], r.invoke, r.done)+2 {
			implausible++
		}
	}
	if hk.Handoffs > 0 {
		hk.MeanWaiters = float64(sum) / float64(hk.Handoffs)
	}
	return hk, sum, implausible, true
}

// sortIfNot sorts ts unless it is sorted already (a run's times mostly are).
func sortIfNot(ts []int64) {
	if !slices.IsSorted(ts) {
		slices.Sort(ts)
	}
}

// within counts the sorted times ts in [from, to].
func within(ts []int64, from, to int64) int64 {
	lo, _ := slices.BinarySearch(ts, from)
	hi := sort.Search(len(ts), func(i int) bool { return ts[i] > to })
	return int64(max(0, hi-lo))
}
