package lock

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"

	"github.com/zkchaos/zkchaos/history"
)

// NameLiveness is the liveness checker.
const NameLiveness = "liveness"

// Stall kinds of the liveness checker.
const (
	// StallFreeWithWaiters: by the history nobody held the lock, yet
	// acquires on it were waiting; the waiters are stuck on something that
	// is not a holder (a leaked queue node, a watch that will never fire).
	StallFreeWithWaiters = "free-with-waiters"
	// StallNoAcquisition: no acquisition of the key for far longer than the
	// acquire timeout while acquires on it kept timing out.
	StallNoAcquisition = "no-acquisition"
)

// Stall is one liveness violation.
type Stall struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	// FromNS and ToNS bound the stall on the run clock.
	FromNS int64 `json:"from_ns"`
	ToNS   int64 `json:"to_ns"`
	// CountedMS is the part of the stall outside every excused fault
	// window, which is what the threshold applies to.
	CountedMS float64 `json:"counted_ms"`
	// Processes are the stuck waiters (or those whose acquires timed out).
	Processes []int  `json:"processes"`
	Message   string `json:"message"`
}

// LivenessDetails is the evidence of the liveness checker.
type LivenessDetails struct {
	Stalls []Stall `json:"stalls"`
	// AcquireTimeoutMS is the acquire timeout the thresholds derive from:
	// the median latency of acquires that failed with a timeout, or 5 s
	// when none did.
	AcquireTimeoutMS float64 `json:"acquire_timeout_ms"`
	// FreeThresholdMS and DroughtThresholdMS are the limits applied.
	FreeThresholdMS    float64 `json:"free_threshold_ms"`
	DroughtThresholdMS float64 `json:"drought_threshold_ms"`
	// ExcusedFaults counts the nemesis windows time was excused for.
	ExcusedFaults int    `json:"excused_faults"`
	Note          string `json:"note,omitempty"`
	// FirstViolationTimeNS is when (run clock) the first violation
	// happened, the figure test-all reports as time to first violation.
	FirstViolationTimeNS *int64 `json:"first_violation_time_ns,omitempty"`
}

// Grace after a fault ends during which stalls are still excused: the
// ensemble needs to elect and clients to reconnect after server faults; a
// resumed or reconnected client needs a moment to find out where it is.
const (
	ensembleFaultGrace = 5 * time.Second
	clientFaultGrace   = 2 * time.Second
)

// CheckLiveness finds locks that stop being handed on: waiters stuck while
// the history shows nobody holding the lock, and keys that see no grant for
// far longer than the acquire timeout while acquires on them keep timing
// out. Waiting behind a holder that is paused or cut off is not a liveness
// failure (ZooKeeper must first expire its session), so the history's
// notion of "held" is conservative: a holder that was retired with an
// unknown outcome, or whose release is unknown, holds until someone else
// is granted the key. Time inside nemesis windows (plus a grace) is not
// counted: for faults of the ensemble on every key, for a fault aimed at
// one worker on the keys that worker used meanwhile.
func CheckLiveness(ctx context.Context, in checker.Input) checker.Result {
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
	ix := indexOps(v.Ops, func(o *lockview.Op) bool { return o.Key != "" }, liveOpOf)
	lost := map[string][]lockview.Instant{}
	for _, e := range v.Instants {
		if e.F == history.FLost {
			lost[e.Key] = append(lost[e.Key], e)
			ix.procs.id(e.Process)
		}
	}
	keys := slices.Sorted(maps.Keys(ix.byKey))
	for _, k := range keys {
		if ctx.Err() != nil {
			return checker.Cancelled(ctx)
		}
		ops := ix.byKey[k]
		ex := excused(v.Faults, ops, ix.procs)
		d.Stalls = append(d.Stalls, freeStalls(k, ops, ix.procs, lost[k], v.End, ex, freeT)...)
		d.Stalls = append(d.Stalls, droughts(k, ops, ix.procs, v.End, ex, droughtT)...)
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

// CheckLivenessSoFar is liveness on the records of a run still going
// (checker.Checker's SoFar). A stall found there stays one: by the
// records so far nobody held the key while acquires waited, and a later
// answer can only place a grant later (an acquire still open waits until
// its answer). Fault windows excuse time, and one not yet closed (or
// within its grace) may still excuse more of it, so the records are
// judged only once every fault is undone and its grace has passed. One
// thing can take a stall back: the thresholds derive from the acquires
// that timed out so far (inferAcquireTimeout), and slower timeouts later
// raise them; the full check decides.
func CheckLivenessSoFar(ctx context.Context, in checker.Input) checker.Result {
	var end int64
	for _, e := range in.History {
		end = max(end, e.Time)
	}
	for _, f := range checker.FaultWindows(in.History) {
		if f.To < 0 || end < f.To+int64(ensembleFaultGrace) {
			return checker.Result{Valid: checker.Unknown, Error: "a fault may still excuse the time so far: judged once it is undone and its grace has passed"}
		}
	}
	return CheckLiveness(ctx, in)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// inferAcquireTimeout is the median latency of acquires that timed out.
func inferAcquireTimeout(ops []lockview.Op) time.Duration {
	var lat []int64
	for _, o := range ops {
		if o.F == history.FAcquire && o.Type == history.Fail && strings.Contains(o.Error, "timeout") {
			lat = append(lat, o.Done-o.Invoke)
		}
	}
	if len(lat) == 0 {
		return 5 * time.Second
	}
	slices.Sort(lat)
	return time.Duration(lat[len(lat)/2])
}

type span struct{ from, to int64 }

// excused are the fault windows (with grace) that count for a key: every
// ensemble fault, and client faults whose target used the key meanwhile
// (found by binary search in its operations sorted by invocation, not by
// a scan per fault), merged into their union. The uses are sorted only
// when some fault is aimed at a worker.
func excused(faults []checker.FaultWindow, ops []liveOp, procs *procIDs) *cover {
	var used []*uses
	var out []span
	for _, f := range faults {
		if f.Process < 0 {
			out = append(out, span{f.From, f.To + int64(ensembleFaultGrace)})
			continue
		}
		if used == nil {
			used = usesOf(ops, len(procs.list))
		}
		to := f.To + int64(clientFaultGrace)
		if u := procs.lookup(f.Process); u >= 0 && used[u].during(f.From, to) {
			out = append(out, span{f.From, to})
		}
	}
	return coverOf(out)
}

// uses are one process's operations on a key sorted by invocation, with,
// for each prefix, the latest completion of its completed operations and
// whether it holds an open one (an open operation lasts to any end).
type uses struct {
	invokes []int64
	maxDone []int64
	open    []bool
}

// usesOf are the uses of each process (by its number; nil for one without
// operations on the key). The order among equal invocations does not
// matter: during reads the prefix that ends after all of them.
func usesOf(ops []liveOp, procs int) []*uses {
	type use struct {
		invoke, done int64
		open         bool
	}
	// Each process's operations in one slice, in the key's order: counted
	// first, then placed (no slice grown per process).
	start := make([]int, procs+1)
	for _, o := range ops {
		start[o.pid+1]++
	}
	for p := range procs {
		start[p+1] += start[p]
	}
	next := slices.Clone(start)
	flat := make([]use, len(ops))
	for _, o := range ops {
		flat[next[o.pid]] = use{o.invoke, o.done, o.open}
		next[o.pid]++
	}
	byProc := make([][]use, procs)
	for p := range byProc {
		byProc[p] = flat[start[p]:start[p+1]]
	}
	out := make([]*uses, len(byProc))
	for p, us := range byProc {
		if len(us) == 0 {
			continue
		}
		byInvoke := func(a, b use) int { return cmp.Compare(a.invoke, b.invoke) }
		if !slices.IsSortedFunc(us, byInvoke) {
			slices.SortFunc(us, byInvoke)
		}
		u := &uses{invokes: make([]int64, len(us)), maxDone: make([]int64, len(us)), open: make([]bool, len(us))}
		done, open := int64(math.MinInt64), false
		for i, o := range us {
			if o.open {
				open = true
			} else {
				done = max(done, o.done)
			}
			u.invokes[i], u.maxDone[i], u.open[i] = o.invoke, done, open
		}
		out[p] = u
	}
	return out
}

// during says whether an operation was invoked by to and not completed
// before from (an open one counts as completed at to).
func (u *uses) during(from, to int64) bool {
	if u == nil {
		return false
	}
	n := sort.Search(len(u.invokes), func(i int) bool { return u.invokes[i] > to })
	return n > 0 && (u.maxDone[n-1] >= from || (u.open[n-1] && to >= from))
}

// cover is a union of spans, disjoint and sorted, with the length covered
// before each: how much of a stretch lies outside it takes two binary
// searches.
type cover struct {
	spans  []span
	before []int64
}

func coverOf(ex []span) *cover {
	var s []span
	for _, e := range ex {
		if e.from < e.to {
			s = append(s, e)
		}
	}
	slices.SortFunc(s, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	c := &cover{}
	for _, e := range s {
		if n := len(c.spans); n > 0 && e.from <= c.spans[n-1].to {
			c.spans[n-1].to = max(c.spans[n-1].to, e.to)
			continue
		}
		c.spans = append(c.spans, e)
	}
	var sum int64
	for _, e := range c.spans {
		c.before = append(c.before, sum)
		sum += e.to - e.from
	}
	return c
}

// covered is how much of the cover lies before t.
func (c *cover) covered(t int64) int64 {
	i := sort.Search(len(c.spans), func(i int) bool { return c.spans[i].from >= t })
	if i == 0 {
		return 0
	}
	last := c.spans[i-1]
	return c.before[i-1] + min(last.to, t) - last.from
}

// counted is how much of [from, to] lies outside the cover.
func (c *cover) counted(from, to int64) int64 {
	if to <= from {
		return to - from
	}
	return to - from - (c.covered(to) - c.covered(from))
}

// droughts finds long stretches without a grant of key during which
// acquires on it timed out.
func droughts(key string, ops []liveOp, procs *procIDs, end int64, ex *cover, limit time.Duration) []Stall {
	var grants []int64
	first := int64(-1)
	for _, o := range ops {
		if o.kind != evAnswer {
			continue // not an acquire
		}
		if first < 0 || o.invoke < first {
			first = o.invoke
		}
		if o.out == outOK {
			grants = append(grants, o.done)
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
		c := ex.counted(from, to)
		if c <= int64(limit) {
			continue
		}
		failed := map[history.Process]bool{}
		n := 0
		for _, o := range ops {
			if o.kind == evAnswer && o.out != outOK && !o.open && o.invoke >= from && o.done <= to {
				failed[procs.list[o.pid]] = true
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

func sortedProcs(m map[history.Process]bool) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, int(p))
	}
	sort.Ints(out)
	return out
}
