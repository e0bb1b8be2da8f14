package lock

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// keyEvent is one change of a key's holders or waiters (freeStalls), 16
// bytes without pointers: the process is that of the operation (or lost
// event) it names.
type keyEvent struct {
	t int64
	// ord is rank<<63 | seq<<5 | kind<<2 | outcome: at equal times
	// completions (rank 0) before invocations (rank 1), then in the order
	// appended (seq: the operation's place in the key's list, or after
	// them all a lost event's place; unique, so the low bits never
	// decide), and what changed, so that the replay reads no operation.
	ord uint64
}

const rankWait = uint64(1) << 63

// Outcomes of an acquire's answer, in the low bits of keyEvent.ord.
const (
	outOther = iota
	outOK
	outUnsure // info, or never answered
)

func outcome(t history.Type) uint64 {
	switch t {
	case history.OK:
		return outOK
	case history.Info, "":
		return outUnsure
	}
	return outOther
}

func ordOf(wait bool, seq int, kind int, out uint64) uint64 {
	o := uint64(seq)<<5 | uint64(kind)<<2 | out
	if wait {
		o |= rankWait
	}
	return o
}

const (
	evNone   = iota // an operation that changes nothing
	evWait          // an acquire invoked
	evAnswer        // an acquire answered (typ), or never
	evUnsure        // another operation without a known outcome: a holder may be a ghost
	evGone          // a release answered, or a lost event: no longer a holder
)

// doneKind is what an operation's completion changes.
func doneKind(o *lockview.Op) int {
	switch {
	case o.F == history.FAcquire:
		return evAnswer
	case o.Type == "" || o.Type == history.Info:
		return evUnsure
	case o.F == history.FRelease:
		return evGone
	}
	return evNone
}

// liveOp is what liveness reads of an operation of a key, 24 bytes
// without pointers, gathered in the one pass that groups the view by key:
// the key's passes then read these in order, not operations scattered
// over the view.
type liveOp struct {
	invoke, done int64
	pid          int32
	kind         int8  // what its completion changes (evAnswer: an acquire)
	out          uint8 // an acquire answer's outcome
	open         bool  // never answered
}

func liveOpOf(o *lockview.Op, pid int32) liveOp {
	return liveOp{invoke: o.Invoke, done: o.Done, pid: pid, kind: int8(doneKind(o)), out: uint8(outcome(o.Type)), open: o.Type == ""}
}

// keyEvents lists a key's changes in time order. A process does one
// operation at a time, so its changes are nearly always in order already:
// they are laid out by process (the lost events apart), each run sorted
// only if it is not, and the runs merged, pairwise, in log(processes)
// linear passes; sorting them all at once was a third of the check. The
// order is the one sort by (t, ord) gives, since no two events share ord.
func keyEvents(ops []liveOp, np int, lost []lockview.Instant, end int64) []keyEvent {
	bounds := make([]int, np+2) // run np: the lost events
	for _, o := range ops {
		bounds[o.pid+1] += [...]int{evAnswer: 2, evUnsure: 1, evGone: 1}[o.kind]
	}
	bounds[np+1] = len(lost)
	for r := range np + 1 {
		bounds[r+1] += bounds[r]
	}
	evs := make([]keyEvent, bounds[np+1])
	next := slices.Clone(bounds)
	put := func(r int, e keyEvent) {
		evs[next[r]] = e
		next[r]++
	}
	for j, o := range ops {
		p := int(o.pid)
		switch o.kind {
		case evAnswer:
			done := o.done
			if o.open {
				done = end
			}
			put(p, keyEvent{o.invoke, ordOf(true, j, evWait, 0)})
			put(p, keyEvent{done, ordOf(false, j, evAnswer, uint64(o.out))})
		case evUnsure, evGone:
			put(p, keyEvent{o.done, ordOf(false, j, int(o.kind), 0)})
		}
	}
	for l, e := range lost {
		put(np, keyEvent{e.Time, ordOf(false, len(ops)+l, evGone, 0)})
	}
	for r := range np + 1 {
		if run := evs[bounds[r]:bounds[r+1]]; !slices.IsSortedFunc(run, cmpEvent) {
			slices.SortFunc(run, cmpEvent)
		}
	}
	return mergeRuns(evs, bounds)
}

func cmpEvent(a, b keyEvent) int {
	return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.ord, b.ord))
}

func lessEvent(a, b keyEvent) bool { return a.t < b.t || a.t == b.t && a.ord < b.ord }

// mergeRuns merges the sorted runs evs[bounds[i]:bounds[i+1]], two by two
// until one is left.
func mergeRuns(evs []keyEvent, bounds []int) []keyEvent {
	buf := make([]keyEvent, len(evs))
	for len(bounds) > 2 {
		k := len(bounds) - 1
		merged := make([]int, 0, k/2+2)
		for i := 0; i < k; i += 2 {
			lo, mid, hi := bounds[i], bounds[i+1], bounds[i+1]
			if i+2 <= k {
				hi = bounds[i+2]
			}
			mergeTwo(buf[lo:hi], evs[lo:mid], evs[mid:hi])
			merged = append(merged, lo)
		}
		bounds = append(merged, bounds[k])
		evs, buf = buf, evs
	}
	return evs
}

// mergeTwo merges the sorted a and b into out.
func mergeTwo(out, a, b []keyEvent) {
	i, j := 0, 0
	for n := range out {
		if j == len(b) || i < len(a) && !lessEvent(b[j], a[i]) {
			out[n] = a[i]
			i++
		} else {
			out[n] = b[j]
			j++
		}
	}
}

// Holder states of a process in a replay.
const (
	notHolder = iota
	holder
	ghost // outcome unknown: it may hold the lock
)

// replay is a key's holders and waiters, by process number.
type replay struct {
	state   []int8
	holders int
	ghosts  []int32 // every ghost is here (and some former ones)
	waitPos []int32 // place in waiting, -1 when not waiting
	waiting []int32
	isStuck []bool
	stuck   []int32
}

func newReplay(n int) *replay {
	r := &replay{state: make([]int8, n), waitPos: make([]int32, n), isStuck: make([]bool, n)}
	for i := range r.waitPos {
		r.waitPos[i] = -1
	}
	return r
}

func (r *replay) wait(p int32) {
	if r.waitPos[p] < 0 {
		r.waitPos[p] = int32(len(r.waiting))
		r.waiting = append(r.waiting, p)
	}
}

func (r *replay) unwait(p int32) {
	i := r.waitPos[p]
	if i < 0 {
		return
	}
	last := r.waiting[len(r.waiting)-1]
	r.waiting[i], r.waitPos[last] = last, i
	r.waiting = r.waiting[:len(r.waiting)-1]
	r.waitPos[p] = -1
}

func (r *replay) set(p int32, s int8) {
	switch {
	case r.state[p] == notHolder && s != notHolder:
		r.holders++
	case r.state[p] != notHolder && s == notHolder:
		r.holders--
	}
	if s == ghost && r.state[p] != ghost {
		r.ghosts = append(r.ghosts, p)
	}
	r.state[p] = s
}

// apply is one change: the rules of the history's notion of "held"
// (CheckLiveness).
func (r *replay) apply(kind int, p int32, out uint64) {
	switch kind {
	case evWait:
		r.wait(p)
	case evAnswer:
		r.unwait(p)
		switch out {
		case outOK:
			// A grant ends every ghost: ZooKeeper handed the lock on.
			for _, g := range r.ghosts {
				if r.state[g] == ghost {
					r.set(g, notHolder)
				}
			}
			r.ghosts = r.ghosts[:0]
			r.set(p, holder)
		case outUnsure:
			r.set(p, ghost) // it may hold the lock
		}
	case evUnsure:
		if r.state[p] != notHolder {
			r.set(p, ghost)
		}
	case evGone:
		r.set(p, notHolder)
	}
}

func (r *replay) addStuck(p int32) {
	if !r.isStuck[p] {
		r.isStuck[p] = true
		r.stuck = append(r.stuck, p)
	}
}

func (r *replay) forgetStuck() {
	for _, p := range r.stuck {
		r.isStuck[p] = false
	}
	r.stuck = r.stuck[:0]
}

// takeStuck is the stuck processes sorted, and forgets them.
func (r *replay) takeStuck(procs *procIDs) []int {
	out := make([]int, 0, len(r.stuck))
	for _, p := range r.stuck {
		out = append(out, int(procs.list[p]))
		r.isStuck[p] = false
	}
	r.stuck = r.stuck[:0]
	sort.Ints(out)
	return out
}

// freeStalls replays one key: holders come and go, waiters wait; every
// stretch where the key is free while someone waits is measured. The
// waiters seen stuck in a stretch are those waiting when it began and
// those that began waiting during it.
func freeStalls(key string, ops []liveOp, procs *procIDs, lost []lockview.Instant, end int64, ex *cover, limit time.Duration) []Stall {
	evs := keyEvents(ops, len(procs.list), lost, end)
	r := newReplay(len(procs.list))
	var out []Stall
	var from int64 = -1
	flush := func(t int64) {
		if c := ex.counted(from, t); c > int64(limit) {
			stuck := r.takeStuck(procs)
			out = append(out, Stall{Kind: StallFreeWithWaiters, Key: key, FromNS: from, ToNS: t, CountedMS: float64(c) / 1e6,
				Processes: stuck,
				Message: fmt.Sprintf("%s was free for %.1fs (%.1fs outside fault windows) while processes %v waited for it",
					key, float64(t-from)/1e9, float64(c)/1e9, stuck)})
		} else {
			r.forgetStuck()
		}
		from = -1
	}
	n := uint64(len(ops))
	for _, e := range evs {
		kind, p, out := decode(e, ops, procs, lost, n)
		r.apply(kind, p, out)
		stalled := r.holders == 0 && len(r.waiting) > 0
		switch {
		case stalled && from < 0:
			from = e.t
			for _, w := range r.waiting {
				r.addStuck(w)
			}
		case !stalled && from >= 0:
			flush(e.t)
		case from >= 0 && kind == evWait:
			r.addStuck(p)
		}
	}
	if from >= 0 {
		flush(end)
	}
	return out
}

// decode is what a key event changes and for which process.
func decode(e keyEvent, ops []liveOp, procs *procIDs, lost []lockview.Instant, n uint64) (kind int, p int32, out uint64) {
	seq := (e.ord &^ rankWait) >> 5
	kind, out = int(e.ord>>2&7), e.ord&3
	if seq >= n {
		return kind, procs.lookup(lost[seq-n].Process), out
	}
	return kind, ops[seq].pid, out
}
