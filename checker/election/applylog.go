package election

import (
	"cmp"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// bySeq is the apply log in commit order (a copy only when it is not).
func bySeq(log []register.Entry) []register.Entry {
	less := func(a, b register.Entry) int { return cmp.Compare(a.Seq, b.Seq) }
	if slices.IsSortedFunc(log, less) {
		return log
	}
	log = slices.Clone(log)
	slices.SortStableFunc(log, less)
	return log
}

// isTaskCall reports whether e is a claim or complete of the task table.
func isTaskCall(e register.Entry) bool { return e.Op == opClaim || e.Op == opComplete }

// taskOf names an entry's task: Task, or Key for a register that wrote
// the task there.
func taskOf(e register.Entry) string {
	if e.Task != "" {
		return e.Task
	}
	return e.Key
}

// taskID is a task of a service.
type taskID struct{ service, task string }

// afterStart places an entry's commit on the run's timeline (nil when the
// run's start or the entry's wall clock is not known).
func afterStart(in checker.Input, e register.Entry) *int64 { return afterWall(in.StartWall, e) }

// afterWall places an entry's commit on the timeline of a run that
// started at startWall (Unix ns; nil when either is not known).
func afterWall(startWall int64, e register.Entry) *int64 {
	if startWall == 0 || e.Wall == 0 {
		return nil
	}
	return history.Int64(e.Wall - startWall)
}

// completeOK finds the history time of the worker's ok for the complete
// in e (its process, task and term), the time it learnt it was accepted.
func completeOK(h []history.Event, e register.Entry) *int64 {
	for _, x := range h {
		if x.F == history.FComplete && x.Type == history.OK && int(x.Process) == e.Process && x.Key == taskOf(e) &&
			x.Value != nil && x.Value.Token != nil && *x.Value.Token == e.Token {
			return history.Int64(x.Time)
		}
	}
	return nil
}
