package matrix

import (
	"fmt"
	"time"
)

// How the table, the summary, the index and the JUnit file tell a cell's
// first violations: from the run's first client operation (Attempt's
// ToFirst), and for a cell that runs until its first violation, against
// the limit it ran under, so a reader sees both the rate and the cost.

// firstOf is what attempt a of cell c says of its first violation:
// "4.2s", "4.2s (limit 120s)" for a cell that stops at it, "none in
// 120s" for one that ran its limit without it, "-" when the attempt has
// nothing to say (no violation expected or measured, no verdict).
func firstOf(c Cell, a Attempt) string {
	lim := c.StopLimit()
	switch {
	case a.ToFirst != nil && lim > 0:
		return fmt.Sprintf("%s (limit %s)", durString(a.ToFirst), secs(lim))
	case a.ToFirst != nil:
		return durString(a.ToFirst)
	case lim > 0 && a.Actual != nil && !detected(c, a):
		return "none in " + secs(lim)
	}
	return "-"
}

// firstsOf sums up a judged cell's first violations over its detected
// attempts: "median 4.2s, p95 6.0s (limit 120s)"; "" for a cell that
// expects none.
func firstsOf(cr CellResult) string {
	if !cr.Cell.ExpectsViolation() {
		return ""
	}
	s := fmt.Sprintf("median %s, p95 %s", durString(cr.MedianToFirst), durString(cr.P95ToFirst))
	if cr.Limit > 0 {
		s += " (limit " + secs(cr.Limit) + ")"
	}
	return s
}

// missed says how many attempts of a cell that stops at its first
// violation ran their whole limit without it: "no violation in 120s in
// 1 of 3 runs"; "" when none did or the cell runs its time.
func missed(cr CellResult) string {
	if cr.Limit == 0 {
		return ""
	}
	n := 0
	for _, a := range cr.Attempts {
		if a.Actual != nil && !detected(cr.Cell, a) {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("no violation in %s in %d of %d runs", secs(cr.Limit), n, len(cr.Attempts))
}

// secs writes a limit in whole seconds: 120s.
func secs(d time.Duration) string { return fmt.Sprintf("%.0fs", d.Seconds()) }
