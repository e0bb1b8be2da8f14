// Package anchor names the elements of report.html that other parts of the
// page, other pages (compare, the test-all index) and the browser tests
// link to. One owner for the names, so a link cannot drift from its target.
package anchor

import "fmt"

// Section ids of report.html.
const (
	Figures  = "figures"
	Timeline = "timeline"
	Stories  = "stories"
	Metrics  = "metrics"
	Runbook  = "runbook"
	Soak     = "soak"
)

// Violation is the id of the timeline's mark for violation i (its index
// in the checker's details in results.json) of the named checker, e.g.
// "double-writer-0". Every violation listed in results.json has one.
func Violation(checker string, i int) string { return fmt.Sprintf("%s-%d", checker, i) }

// Story is the id of the told story of that violation.
func Story(checker string, i int) string { return "story-" + Violation(checker, i) }

// Snapshot is the id of the runbook snapshot shown beside that story.
func Snapshot(checker string, i int) string { return "runbook-" + Violation(checker, i) }

// Write is the id of the apply-log entry with that seq where the timeline
// draws it on its own (not summarised).
func Write(seq int64) string { return fmt.Sprintf("w-%d", seq) }

// Href is the in-page link to id.
func Href(id string) string { return "#" + id }
