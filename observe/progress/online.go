package progress

import (
	"slices"

	"github.com/zkchaos/zkchaos/checker/config"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/resource/register"
)

// feed is one online checker of the apply log, reduced to what the line
// needs: how many violations an entry made, and a description of the
// first.
type feed struct {
	name string
	add  func(*register.Entry) (int, string)
}

// feedOf adapts a streaming checker of the apply log.
func feedOf[V any](c stream.Checker[*register.Entry, V], describe func(V) string) feed {
	return feed{name: c.Name(), add: func(e *register.Entry) (int, string) {
		vs := c.Add(e)
		if len(vs) == 0 {
			return 0, ""
		}
		return len(vs), describe(vs[0])
	}}
}

// historyStream is a streaming checker of the history (paired by
// lockview.Pairer) that can be told the history is over.
type historyStream interface {
	stream.Checker[*lockview.Item, stream.Found]
	Finish() []stream.Found
}

// Online says whether checker has an online version, which can find a
// violation while the run lasts: the double-writer and stale-term on the
// apply log; grant-overlap, token-order, wrong-token and config-monotonic
// on the history.
func Online(checker string) bool {
	names := []string{checker}
	return len(onlineFeeds(names, register.ModeOn)) > 0 || len(historyFeeds(names, register.ModeOn)) > 0
}

// onlineFeeds are the streaming versions of the checkers among names (a
// workload's checkers) that read the apply log, for a run fenced in mode.
func onlineFeeds(names []string, mode string) []feed {
	var out []feed
	if slices.Contains(names, fence.NameDoubleWriter) {
		// Evidence is not kept: the line needs counts, the report has the
		// full check's evidence.
		out = append(out, feedOf(fence.NewStream(0, mode), func(v fence.Violation) string { return v.Message }))
	}
	if slices.Contains(names, election.NameStaleTerm) {
		// The run's start is not needed: the line shows the message, the
		// report the full check's times.
		out = append(out, feedOf(election.NewStaleTermStream(0, 0), func(v election.StaleTerm) string { return v.Message }))
	}
	return out
}

// historyFeeds are the streaming versions of the checkers among names
// that read the history, for a run fenced in mode (wrong-token's strict
// rule). They keep no evidence beyond what their rules need (limit 0).
// Herd and liveness have none: see docs/measurements.md "Streaming
// checkers".
func historyFeeds(names []string, mode string) []historyStream {
	var out []historyStream
	if slices.Contains(names, lock.NameGrantOverlap) {
		s := lock.NewOverlapStream(0, false)
		s.ForgetRetired() // a run retires a process at its info operation
		out = append(out, s)
	}
	if slices.Contains(names, lock.NameTokenOrder) {
		out = append(out, lock.NewTokenOrderStream(0, false))
	}
	if slices.Contains(names, fence.NameWrongToken) {
		s := fence.NewWrongTokenStream(0, mode, false)
		s.ForgetRetired()
		out = append(out, s)
	}
	if slices.Contains(names, config.NameMonotonic) {
		out = append(out, config.NewMonotonicStream(0, false))
	}
	return out
}
