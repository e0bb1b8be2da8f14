package progress

import (
	"slices"

	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/stream"
	"github.com/zkchaos/zkchaos/register"
)

// feed is one online checker, reduced to what the line needs: how many
// violations an entry made, and a description of the first.
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

// Online says whether checker has an online version, which can find a
// violation while the run lasts (only the double-writer today).
func Online(checker string) bool { return len(onlineFeeds([]string{checker})) > 0 }

// onlineFeeds are the streaming versions of the checkers among names (a
// workload's checkers); the soak issue adds the others here.
func onlineFeeds(names []string) []feed {
	var out []feed
	if slices.Contains(names, fence.NameDoubleWriter) {
		// Evidence is not kept: the line needs counts, the report has the
		// full check's evidence.
		out = append(out, feedOf(fence.NewStream(0), func(v fence.Violation) string { return v.Message }))
	}
	return out
}
