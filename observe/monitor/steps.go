package monitor

import (
	"github.com/zkchaos/zkchaos/history"
)

// StepRecorder is the history as the nemesis writes it, with a sample
// asked for after every nemesis step: each completion of a fault's start
// or stop, and of the final restore. Observations (session-gone) and
// invocations are not steps. The runner hands it to the nemesis in place
// of the history, so neither the nemesis nor the monitor knows the other.
type StepRecorder struct {
	history.Recorder
	M *Monitor
}

// Append implements history.Recorder.
func (r StepRecorder) Append(e history.Event) (history.Event, error) {
	e, err := r.Recorder.Append(e)
	if err == nil && IsStep(e) {
		r.M.Step(StepLabel(e), e.Index)
	}
	return e, err
}

// IsStep reports whether e completes a nemesis step.
func IsStep(e history.Event) bool {
	return e.Process == history.Nemesis && e.Type != history.Invoke &&
		(history.IsFaultStart(e.F) || history.IsFaultStop(e.F) || e.F == history.FRestore)
}

// StepLabel names a step for a sample: "pause ok n2".
func StepLabel(e history.Event) string {
	l := e.F + " " + string(e.Type)
	if e.Value != nil && e.Value.Target != "" {
		l += " " + e.Value.Target
	}
	return l
}
