package checker

import (
	"fmt"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
)

// Completion says whether the run behind a history finished: a run that
// was killed, interrupted or stopped by a harness failure recorded only
// part of what it was asked to exercise, so finding no violation in it
// proves less than the configuration promises. RunAll makes such a run
// unknown, never valid; a violation found in it is still invalid.
type Completion struct {
	Completed bool `json:"completed"`
	// Phase is the last phase the controller recorded (store.Phase*);
	// "none" when the run folder has no status.json.
	Phase string `json:"phase"`
	// ReachedNS is how far the workload got on the run clock: its own
	// duration when the controller recorded it, else the time of the last
	// event in the history. TimeLimitNS is what it was asked to run.
	ReachedNS   int64 `json:"reached_ns"`
	TimeLimitNS int64 `json:"time_limit_ns"`
	// FinalPhase says every fault was undone and the final reads ran.
	FinalPhase     bool   `json:"final_phase"`
	StoppedBecause string `json:"stopped_because,omitempty"`
	// StoppedAtFirst says the run is incomplete only because it was asked
	// to stop at its first violation (chaos run --stop-at-first) and did:
	// the controller finished and the final phase ran. Such a run is
	// invalid by the violation it stopped at; finding none, it is unknown
	// like any other incomplete run.
	StoppedAtFirst bool `json:"stopped_at_first_violation,omitempty"`
	// Segments is how many controllers carried the run (chaos soak
	// --resume); above 1 the run had gaps, and Completed judges the last
	// segment: the earlier ones were cut by their controller's death and
	// their interrupted operations were completed as info at the resume.
	Segments int `json:"segments,omitempty"`
	// Why says, in one line, what makes the run incomplete.
	Why string `json:"why,omitempty"`
}

// CompletionOf judges a run from its status.json (found false when the
// folder has none) and the time of the last event in its history.
func CompletionOf(st store.Status, found bool, historyEndNS int64) Completion {
	c := Completion{Phase: string(st.Phase), ReachedNS: st.WorkloadNS, TimeLimitNS: st.TimeLimitNS,
		FinalPhase: st.FinalPhase, StoppedBecause: st.StoppedBecause, Segments: st.Segment}
	if !found {
		c.Phase = "none"
	}
	if c.ReachedNS == 0 {
		c.ReachedNS = historyEndNS
	}
	reached := fmt.Sprintf("workload reached %s of %s", dur(c.ReachedNS), dur(c.TimeLimitNS))
	if st.Segment > 1 {
		reached = fmt.Sprintf("segment %d (resumed after a gap): %s", st.Segment, reached)
	}
	first, atFirst := store.StoppedAtFirst(st)
	switch {
	case !found:
		c.Why = "no status.json: no controller carried this run through (the history ends at " + dur(historyEndNS) + ")"
	case st.Phase != store.PhaseDone:
		c.Why = fmt.Sprintf("the controller stopped in phase %q without finishing (killed?); %s", st.Phase, reached)
	case atFirst && st.FinalPhase:
		c.StoppedAtFirst = true
		c.Why = fmt.Sprintf("stopped at its first violation (%s), as %s asks; %s, then the final phase ran", first, setting.Name("StopAtFirst"), reached)
	case st.StoppedBecause != store.StopTimeLimit && st.StoppedBecause != store.StopScheduleDone:
		c.Why = fmt.Sprintf("the workload stopped early (%s); %s", st.StoppedBecause, reached)
	case !st.FinalPhase:
		c.Why = "the final phase (heal everything, final reads) did not run to its end"
	default:
		c.Completed = true
		switch {
		case st.Segment > 1:
			c.Why = fmt.Sprintf("complete in %d segments: resumed after a gap, the last segment ran to its end", st.Segment)
		case st.StoppedBecause == store.StopScheduleDone:
			c.Why = fmt.Sprintf("complete: ended once its schedule's last entry was undone, as %s asks; %s", setting.Name("StopAfterSchedule"), reached)
		}
	}
	return c
}

func dur(ns int64) string { return time.Duration(ns).Round(time.Millisecond).String() }

// applyCompletion lowers a verdict that rests on an incomplete run: valid
// becomes unknown (invalid stays invalid: a violation seen is real). A run
// stopped at its first violation is no exception: if the full check finds
// nothing, the online check and the full one disagree, and the run is
// unknown.
func applyCompletion(res *Results, c *Completion) {
	if c == nil {
		return
	}
	res.Completion = c
	if c.Completed {
		return
	}
	if c.StoppedAtFirst {
		res.Reasons = append(res.Reasons, "run "+c.Why)
	} else {
		res.Reasons = append(res.Reasons, "run incomplete: "+c.Why)
	}
	if res.Valid == Valid {
		res.Valid = Unknown
	}
}
