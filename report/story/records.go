package story

import (
	"cmp"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// records are the run's files indexed once for every story: the history
// as the lock checkers read it (lockview pairs it; nothing here pairs
// again), per process, and the apply log in commit order.
type records struct {
	v         lockview.View
	ops       map[history.Process][]lockview.Op
	instants  map[history.Process][]lockview.Instant
	log       []register.Entry
	startWall int64
	// nemesis are the nemesis' events, for when an undo was sent (a
	// fault window ends at its undo's completion) and whether it was.
	nemesis []history.Event
}

func newRecords(in Input) *records {
	r := &records{v: lockview.Of(in.History), ops: map[history.Process][]lockview.Op{},
		instants: map[history.Process][]lockview.Instant{}, startWall: in.StartWall}
	for _, o := range r.v.Ops {
		r.ops[o.Process] = append(r.ops[o.Process], o)
	}
	for _, e := range r.v.Instants {
		r.instants[e.Process] = append(r.instants[e.Process], e)
	}
	for _, e := range in.History {
		if e.Process == history.Nemesis {
			r.nemesis = append(r.nemesis, e)
		}
	}
	r.log = in.ApplyLog
	if !slices.IsSortedFunc(r.log, bySeq) {
		r.log = slices.Clone(r.log)
		slices.SortStableFunc(r.log, bySeq)
	}
	return r
}

func bySeq(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) }

// when is a time on the run clock that the records may not give.
type when struct {
	ns int64
	ok bool
}

func at(ns int64) when { return when{ns, true} }

// grant is one grant of a lock or leadership: who, which token.
type grant struct {
	process  int
	token    int64
	hasToken bool
}

func grantOfEntry(e register.Entry) grant { return grant{e.Process, e.Token, e.HasToken} }

// grantOp finds the grant's acquire (verb: history.FAcquire, or
// FCampaign for a leadership) of key that answered ok, with the grant's
// token when it has one: the last before `before` (tokens from sequence
// numbers can repeat), else the first after it.
func (r *records) grantOp(verb, key string, g grant, before when) (lockview.Op, bool) {
	var last, first lockview.Op
	hasLast, hasFirst := false, false
	for _, o := range r.ops[history.Process(g.process)] {
		if o.F != verb || o.Key != key || o.Type != history.OK {
			continue
		}
		if tok, has := o.Token(); g.hasToken && (!has || tok != g.token) {
			continue
		}
		switch {
		case !before.ok || o.Done <= before.ns:
			last, hasLast = o, true
		case !hasFirst:
			first, hasFirst = o, true
		}
	}
	if hasLast {
		return last, true
	}
	return first, hasFirst
}

// entryTime places an apply-log entry on the run clock: its commit by the
// register's wall clock when the run's start is known, else the worker's
// ok for it in the history (when it learnt the answer, an upper bound).
func (r *records) entryTime(e register.Entry) when {
	if r.startWall != 0 && e.Wall != 0 {
		return at(e.Wall - r.startWall)
	}
	key := entryKey(e)
	for _, o := range r.ops[history.Process(e.Process)] {
		if o.F != e.Op || o.Key != key || o.Type == "" || o.Value == nil {
			continue
		}
		if tok, has := o.Token(); has != e.HasToken || (has && tok != e.Token) {
			continue
		}
		if e.Op == register.OpWrite && (o.Value.N == nil || *o.Value.N != e.Value) {
			continue
		}
		return at(o.Done)
	}
	return when{}
}

// lastRead is the grant's last read of key in the apply log before seq:
// what a writer's value was built on.
func (r *records) lastRead(key string, g grant, seq int64) (register.Entry, bool) {
	i, _ := slices.BinarySearchFunc(r.log, seq, func(e register.Entry, s int64) int { return cmp.Compare(e.Seq, s) })
	for j := i - 1; j >= 0; j-- {
		e := r.log[j]
		if e.Op == register.OpRead && e.Key == key && e.Process == g.process && (!g.hasToken || !e.HasToken || e.Token == g.token) {
			return e, true
		}
	}
	return register.Entry{}, false
}

// writesBetween are the accepted writes of key with from < seq < to.
func (r *records) writesBetween(key string, from, to int64) []register.Entry {
	var out []register.Entry
	for _, e := range r.log {
		if e.Seq > from && e.Seq < to && e.Op == register.OpWrite && e.Key == key && e.Accepted {
			out = append(out, e)
		}
	}
	return out
}

// writesOf are the grant's writes of key (accepted or not), in commit
// order: under one grant, one token and one process.
func (r *records) writesOf(key string, g grant) []register.Entry {
	var out []register.Entry
	for _, e := range r.log {
		if e.Op == register.OpWrite && e.Key == key && grantOfEntry(e) == g {
			out = append(out, e)
		}
	}
	return out
}

// faultsOn are the fault windows that acted on worker process p and
// overlap [from, to], and the ensemble's faults that do.
func (r *records) faultsOn(p int, from, to int64) (mine, ensemble []checker.FaultWindow) {
	for _, w := range r.v.Faults {
		if w.From > to || w.To < from {
			continue
		}
		switch {
		case w.Process == history.Process(p):
			mine = append(mine, w)
		case w.Process < 0 && w.F != history.FRestore:
			ensemble = append(ensemble, w)
		}
	}
	return mine, ensemble
}

// sessionEnds are what the records say of p's session in [from, to]: its
// own session events and lost reports for key, and the nemesis'
// observations that a session of p was gone from the servers.
func (r *records) sessionEnds(p int, key string, from, to int64) ([]lockview.Instant, []lockview.Gone) {
	var ins []lockview.Instant
	for _, e := range r.instants[history.Process(p)] {
		if e.Time >= from && e.Time <= to && e.Value != nil &&
			(e.F == history.FSession || (e.F == history.FLost && e.Key == key)) {
			ins = append(ins, e)
		}
	}
	var gone []lockview.Gone
	for _, g := range r.v.Gone {
		if int(g.Process) == p && g.Time >= from && g.Time <= to {
			gone = append(gone, g)
		}
	}
	return ins, gone
}

// undoSent is when the nemesis invoked the undo that closed w: the last
// invocation of w's stop verb for its PID within the window.
func (r *records) undoSent(w checker.FaultWindow) (int64, bool) {
	t, ok := int64(0), false
	for _, e := range r.nemesis {
		if e.Time > w.To {
			break
		}
		pid := 0
		if e.Value != nil {
			pid = e.Value.PID
		}
		if e.Type == history.Invoke && e.F == w.Stop && e.Time >= w.From && (pid == w.PID || pid == 0 || w.PID == 0) {
			t, ok = e.Time, true
		}
	}
	return t, ok
}

// callOp is the history's operation behind an apply-log write or task
// call: its process's last such operation on that key (task) sent before
// the commit, for a write the one of that value.
func (r *records) callOp(e register.Entry) (lockview.Op, bool) {
	commit := r.entryTime(e)
	key := entryKey(e)
	var found lockview.Op
	ok := false
	for _, o := range r.ops[history.Process(e.Process)] {
		if o.F != e.Op || o.Key != key {
			continue
		}
		if e.Op == register.OpWrite && (o.Invoked == nil || o.Invoked.N == nil || *o.Invoked.N != e.Value) {
			continue
		}
		if commit.ok && o.Invoke > commit.ns {
			break
		}
		found, ok = o, true
	}
	return found, ok
}

// entryKey is the history key of an entry's operation: the register key,
// or the task of a task call.
func entryKey(e register.Entry) string {
	if e.Task != "" {
		return e.Task
	}
	return e.Key
}

// lateOf is the late reply to operation o, if one came; for a write,
// the one of value n.
func (r *records) lateOf(o lockview.Op, n int64) (lockview.Instant, bool) {
	for _, e := range r.instants[o.Process] {
		if e.F == history.FLate && e.Key == o.Key && e.Time >= o.Invoke && e.Value != nil && e.Value.Of == o.F &&
			(o.F != history.FWrite || (e.Value.N != nil && *e.Value.N == n)) {
			return e, true
		}
	}
	return lockview.Instant{}, false
}

// undone says whether the history shows w's undoing: a completion of its
// stop verb, or of the final restore, at its end (lockview ends a window
// never undone at the history's end).
func (r *records) undone(w checker.FaultWindow) bool {
	for _, e := range r.nemesis {
		if e.Type != history.Invoke && e.Time == w.To && (e.F == w.Stop || e.F == history.FRestore) {
			return true
		}
	}
	return false
}
