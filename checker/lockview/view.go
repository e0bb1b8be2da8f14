// Package lockview is the history of the lock workload as the exact lock
// checkers read it: worker operations with their invocation and
// completion paired, the instant events (session, lost, late) apart, and
// the nemesis' fault windows. It is shared by checker/lock and
// checker/fence, so that both read the history the same way.
package lockview

import (
	"regexp"
	"strconv"

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

// FaultWindow is a nemesis fault from its start's invocation to its end's
// completion (or the end of the history).
type FaultWindow struct {
	F        string
	Target   string
	From, To int64
	// Process is the worker process a client-side fault aimed at, -1 for
	// faults of the ensemble (or targets the text does not name).
	Process history.Process
}

// View is the history split for the lock checkers.
type View struct {
	Ops      []Op
	Instants []Instant
	Faults   []FaultWindow
	End      int64
}

var targetProcess = regexp.MustCompile(`\bprocess (\d+)\b`)

// Of pairs operations per process. Instant events are recorded while
// the same process may have an operation in flight, so they never pair with
// it. Nemesis operations alternate start and end: a window opens with the
// first invocation after a closed window and closes with the completion of
// the next different operation (the undo), whatever its name.
func Of(h []history.Event) View {
	var v View
	open := map[history.Process]int{}
	var nem *FaultWindow
	var nemStartF string
	for _, e := range h {
		v.End = max(v.End, e.Time)
		if e.Process == history.Nemesis {
			switch {
			case e.Type == history.Invoke && nem == nil:
				w := FaultWindow{F: e.F, From: e.Time, To: -1, Process: -1}
				if e.Value != nil {
					w.Target = e.Value.Target
				}
				nem, nemStartF = &w, e.F
			case nem != nil && e.Type != history.Invoke && e.F == nemStartF:
				if e.Value != nil && e.Value.Target != "" {
					nem.Target = e.Value.Target
				}
				if e.Type == history.Fail {
					nem = nil // the fault never took effect
				}
			case nem != nil && e.Type != history.Invoke && e.F != nemStartF:
				nem.To = e.Time
				v.Faults = append(v.Faults, *nem)
				nem = nil
			}
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
	if nem != nil {
		nem.To = v.End
		v.Faults = append(v.Faults, *nem)
	}
	for i := range v.Faults {
		if m := targetProcess.FindStringSubmatch(v.Faults[i].Target); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				v.Faults[i].Process = history.Process(n)
			}
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
