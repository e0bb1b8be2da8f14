// Package lockview is the history of the lock workload as the exact lock
// checkers read it: worker operations with their invocation and
// completion paired, the instant events (session, lost, late) apart, and
// the nemesis' fault windows. It is shared by checker/lock and
// checker/fence, so that both read the history the same way.
package lockview

import (
	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
)

// Op is one worker operation of the lock workload with its invocation and
// completion paired.
type Op struct {
	Process history.Process
	F       string
	Key     string
	Invoke  int64 // run clock, ns
	// Done is the completion time; Type is "" when the history ends before
	// the completion (an open operation, which Jepsen reads as info).
	Done  int64
	Type  history.Type
	Value *history.Value
	Error string
}

// Instant is an instant event of a worker (session, lost, late).
type Instant struct {
	Process history.Process
	F       string
	Key     string
	Time    int64
	Value   *history.Value
}

// View is the history split for the lock checkers.
type View struct {
	Ops      []Op
	Instants []Instant
	// Faults are the nemesis' fault windows (checker.FaultWindows); a
	// fault never undone lasts to End.
	Faults []checker.FaultWindow
	End    int64
}

// Of pairs operations per process. Instant events are recorded while
// the same process may have an operation in flight, so they never pair with
// it. Nemesis operations become fault windows (checker.FaultWindows).
func Of(h []history.Event) View {
	var v View
	open := map[history.Process]int{}
	for _, e := range h {
		v.End = max(v.End, e.Time)
		if e.Process == history.Nemesis {
			continue
		}
		if checker.IsInstant(e.F) {
			if e.Type == history.OK {
				v.Instants = append(v.Instants, Instant{Process: e.Process, F: e.F, Key: e.Key, Time: e.Time, Value: e.Value})
			}
			continue
		}
		if e.Type == history.Invoke {
			open[e.Process] = len(v.Ops)
			v.Ops = append(v.Ops, Op{Process: e.Process, F: e.F, Key: e.Key, Invoke: e.Time, Value: e.Value})
			continue
		}
		i, ok := open[e.Process]
		if !ok {
			continue
		}
		delete(open, e.Process)
		op := &v.Ops[i]
		op.Done, op.Type, op.Error = e.Time, e.Type, e.Error
		if e.Value != nil {
			op.Value = e.Value
		}
	}
	v.Faults = checker.FaultWindows(h)
	for i := range v.Faults {
		if v.Faults[i].To < 0 {
			v.Faults[i].To = v.End
		}
	}
	return v
}

// Token is the fencing token the operation's value carries.
func (o Op) Token() (int64, bool) {
	if o.Value == nil || o.Value.Token == nil {
		return 0, false
	}
	return *o.Value.Token, true
}
