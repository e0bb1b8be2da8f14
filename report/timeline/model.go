// Package timeline draws the lock ownership timeline of report.html: one
// lane per key, who held the lock when (by the holder's own account),
// which holders were paused or retired meanwhile, every write where the
// register applied it, the nemesis' fault windows, and each violation the
// checkers found as a mark that links to its story. A double write is a
// stale holder's write landing inside a newer holder's tenure, which is
// exactly what a lane shows at a glance.
//
// The model (Of) is built from the history (through lockview, the
// checkers' own pairing), the register's apply log and results.json;
// Render draws it as SVG by hand: gonum/plot, which draws the report's
// other figures, has no lanes of intervals with marks and links.
package timeline

import (
	"cmp"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Workloads the timeline knows how to draw (Model.Workload).
const (
	WorkloadLock     = "lock"
	WorkloadElection = "election"
)

// A view is how the timeline draws one kind of run: the history's grants
// that make its tenures, and the apply-log entries that are its writes,
// by lane. The first view whose grant the history holds draws it.
type view struct {
	workload string
	grant    string
	tenures  func(lockview.View) map[string][]Tenure
	lane     func(register.Entry) (key string, ok bool)
}

var views = []view{
	{workload: WorkloadLock, grant: history.FAcquire, tenures: lockTenures,
		lane: func(e register.Entry) (string, bool) { return e.Key, e.Op == register.OpWrite }},
	{workload: WorkloadElection, grant: history.FCampaign, tenures: electionTenures,
		lane: func(e register.Entry) (string, bool) {
			return e.Service, e.Op == register.OpClaim || e.Op == register.OpComplete
		}},
}

// Input is what the model is built from: the whole history, the apply
// log, the run's start on the register's wall clock (Unix ns; apply-log
// Wall - StartWall is the run clock) and the checkers' results.
type Input struct {
	History   []history.Event
	ApplyLog  []register.Entry
	StartWall int64
	Results   checker.Results
}

// Model is the timeline of one run.
type Model struct {
	// Workload is WorkloadLock or WorkloadElection, "" when the history
	// has neither grants nor campaigns (the config workload: no locks).
	Workload string
	Lanes    []*Lane
	// Faults are the nemesis' fault windows, closed at End.
	Faults []checker.FaultWindow
	// End is the run-clock end of the figure: the history's last event or
	// the register's last write, whichever is later.
	End   int64
	Marks []Mark
	// UnplacedWrites counts writes that could not be put on the run's
	// clock (no StartWall, or an entry without a wall clock).
	UnplacedWrites int
}

// Lane is one key: its tenures by start, its writes by commit order.
type Lane struct {
	Key     string
	Tenures []Tenure
	Writes  []Write
	// Rows is how many rows the tenures need so that overlapping ones
	// (two processes that each believe they hold the key) sit apart.
	Rows int
}

// How a tenure ended (Tenure.Ended).
const (
	EndReleased   = "released"
	EndLost       = "lost"
	EndSession    = "session ended"
	EndLastHeard  = "retired; last heard from"
	EndRegranted  = "granted again"
	EndHistoryEnd = "end of history"
)

// Tenure is one process holding a key by its own account, from its grant
// to the moment it gave the key up or learnt it had lost it.
type Tenure struct {
	Process  history.Process
	Token    int64
	HasToken bool
	From, To int64
	Ended    string
	// RetiredAt is when an operation of the holder completed info before
	// To (its worker kept running, may be paused and may still write);
	// -1 when it was not retired during the tenure.
	RetiredAt int64
	// Faults are the client faults that acted on the holder during the
	// tenure (pause, isolate, expire), clipped to it.
	Faults []Span
	Row    int
}

// Span is part of a tenure during which a fault acted on its holder.
type Span struct {
	F        string
	From, To int64
}

// Write is one write (lock) or task call (election) of the apply log,
// placed on the run's clock.
type Write struct {
	Seq      int64
	At       int64
	Op       string
	Process  int
	Token    int64
	HasToken bool
	Value    int64
	Task     string
	Accepted bool
	Reason   string
}

// Of builds the model. Nothing is dropped: every tenure and write of the
// history and the apply log is in a lane, every violation of the checkers
// the timeline reads is a mark.
func Of(in Input) Model {
	v := lockview.Of(in.History)
	m := Model{Faults: v.Faults, End: v.End}
	i := slices.IndexFunc(views, func(vw view) bool { return hasGrant(v, vw.grant) })
	if i < 0 {
		return m
	}
	vw := views[i]
	m.Workload = vw.workload
	tenures := vw.tenures(v)
	writes, unplaced := placeWrites(in.ApplyLog, in.StartWall, vw.lane)
	m.UnplacedWrites = unplaced
	for _, k := range laneKeys(tenures, writes) {
		l := &Lane{Key: k, Tenures: tenures[k], Writes: writes[k]}
		for _, w := range l.Writes {
			m.End = max(m.End, w.At)
		}
		l.Rows = assignRows(l.Tenures)
		m.Lanes = append(m.Lanes, l)
	}
	m.Marks = marksOf(in.Results, &m)
	return m
}

// hasGrant says whether any operation f succeeded: which workload drew
// the history.
func hasGrant(v lockview.View, f string) bool {
	return slices.ContainsFunc(v.Ops, func(o lockview.Op) bool { return o.F == f && o.Type == history.OK })
}

func laneKeys(t map[string][]Tenure, w map[string][]Write) []string {
	var keys []string
	for k := range t {
		keys = append(keys, k)
	}
	for k := range w {
		if _, ok := t[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

// compareKeys orders SKU-2 before SKU-10: keys that differ only in a
// trailing number sort by it.
func compareKeys(a, b string) int {
	pa, na := splitNumber(a)
	pb, nb := splitNumber(b)
	if pa == pb && na >= 0 && nb >= 0 {
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(a, b)
}

func splitNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' && len(s)-i < 9 {
		i--
	}
	if i == len(s) {
		return s, -1
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
	}
	return s[:i], n
}

// assignRows puts each tenure (sorted by From) in the first row free at
// its start, and returns the number of rows.
func assignRows(ts []Tenure) int {
	var ends []int64
	for i := range ts {
		row := slices.IndexFunc(ends, func(e int64) bool { return e <= ts[i].From })
		if row < 0 {
			row = len(ends)
			ends = append(ends, 0)
		}
		ends[row] = ts[i].To
		ts[i].Row = row
	}
	return max(1, len(ends))
}

// placeWrites puts the apply log's writes (lock) or task calls (election)
// on the run's clock, by lane. Without StartWall nothing can be placed:
// the register's wall clock and the history's run clock have no common
// origin.
func placeWrites(log []register.Entry, startWall int64, lane func(register.Entry) (string, bool)) (map[string][]Write, int) {
	out := map[string][]Write{}
	unplaced := 0
	for _, e := range log {
		key, ok := lane(e)
		if !ok {
			continue
		}
		if startWall == 0 || e.Wall == 0 {
			unplaced++
			continue
		}
		out[key] = append(out[key], Write{Seq: e.Seq, At: e.Wall - startWall, Op: e.Op, Process: e.Process,
			Token: e.Token, HasToken: e.HasToken, Value: e.Value, Task: e.Task, Accepted: e.Accepted, Reason: e.Reason})
	}
	for _, ws := range out {
		slices.SortFunc(ws, func(a, b Write) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return out, unplaced
}

// lane finds the lane of key.
func (m *Model) lane(key string) (int, *Lane) {
	for i, l := range m.Lanes {
		if l.Key == key {
			return i, l
		}
	}
	return -1, nil
}

// writeBySeq finds a write of lane l by its apply-log seq.
func (l *Lane) writeBySeq(seq int64) int {
	i, ok := slices.BinarySearchFunc(l.Writes, seq, func(w Write, s int64) int { return cmp.Compare(w.Seq, s) })
	if !ok {
		return -1
	}
	return i
}

// tenureOf finds the tenure of process p with token tok that holds at t
// (or, failing that, the last one of p and tok that began by t, or
// its first).
func (l *Lane) tenureOf(p int, tok int64, hasTok bool, t int64) int {
	best := -1
	for i, tn := range l.Tenures {
		if int(tn.Process) != p || (hasTok && tn.HasToken && tn.Token != tok) {
			continue
		}
		if tn.From <= t && t <= tn.To {
			return i
		}
		if tn.From <= t || best < 0 {
			best = i
		}
	}
	return best
}
