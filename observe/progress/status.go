// Package progress is the live view of a run while it lasts: one status
// (elapsed of the time limit, operations by outcome, the fault in effect,
// violations found so far by the online checks) and the places it is
// shown: an updating line on a terminal, a plain line every few seconds
// elsewhere, JSON lines for a parent `chaos test-all`.
//
// Everything here is a progress signal. The violations counted online
// come from the same rules as the checkers' (checker/stream), but the
// run's verdict is the full check after the run, which also judges what
// a live view cannot: whether the logs are complete, and every checker
// that needs the whole history.
package progress

import (
	"fmt"
	"strings"
	"time"
)

// Status is what the progress line shows.
type Status struct {
	// Prefix names the run among several (`cell 3/11 name`); set by
	// whoever shows several runs, never by the run itself.
	Prefix string `json:"-"`
	// Phase is the run's phase (store.Phase: setup, workload, final,
	// teardown, done), or "check" while the checkers run.
	Phase string `json:"phase"`
	// Elapsed is the workload's time so far (frozen at its end), or the
	// time since the run started while it is being set up.
	Elapsed time.Duration `json:"elapsed_ns"`
	Limit   time.Duration `json:"limit_ns"`
	// OK, Fail and Info count the clients' completed operations.
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
	// Fault is the fault being injected or in effect ("" none), and
	// Target its target process (-1: none, or not a process).
	Fault  string `json:"fault,omitempty"`
	Target int    `json:"target"`
	// Faults counts the faults injected so far (a start that did
	// something); Ops the completions by operation.
	Faults int       `json:"faults,omitempty"`
	Ops    []OpCount `json:"ops,omitempty"`
	// Online is each online checker's count so far, in a fixed order.
	Online []Count `json:"online,omitempty"`
}

// OpCount is one operation's completions by outcome.
type OpCount struct {
	F    string `json:"f"`
	OK   int    `json:"ok"`
	Fail int    `json:"fail"`
	Info int    `json:"info"`
}

// Count is one online checker's violations so far.
type Count struct {
	Name       string `json:"name"`
	Violations int    `json:"violations"`
	// Stopped says why the online check stopped early ("" running).
	Stopped string `json:"stopped,omitempty"`
}

// String is the one line, e.g.
//
//	elapsed 23s/60s  ops ok 812 fail 3 info 1  fault pause-holder(p3)  violations 2 (double-writer)
func (s Status) String() string {
	var b strings.Builder
	if s.Prefix != "" {
		b.WriteString(s.Prefix + "  ")
	}
	switch s.Phase {
	case "setup", "":
		fmt.Fprintf(&b, "setup %s", short(s.Elapsed))
	case "workload":
		fmt.Fprintf(&b, "elapsed %s/%s", short(s.Elapsed), short(s.Limit))
	default:
		fmt.Fprintf(&b, "elapsed %s/%s (%s)", short(s.Elapsed), short(s.Limit), s.Phase)
	}
	fmt.Fprintf(&b, "  ops ok %d fail %d info %d  fault %s", s.OK, s.Fail, s.Info, s.fault())
	if len(s.Online) > 0 {
		b.WriteString("  " + s.violations())
	}
	return b.String()
}

func (s Status) fault() string {
	switch {
	case s.Fault == "":
		return "none"
	case s.Target >= 0:
		return fmt.Sprintf("%s(p%d)", s.Fault, s.Target)
	}
	return s.Fault
}

// violations is "violations 2 (double-writer)": the total, then which
// checkers found them (with each one's count when several did), and any
// online check that stopped.
func (s Status) violations() string {
	total, found := 0, 0
	for _, c := range s.Online {
		total += c.Violations
		if c.Violations > 0 {
			found++
		}
	}
	var names []string
	for _, c := range s.Online {
		n := c.Name
		if found > 1 && c.Violations > 0 {
			n += fmt.Sprintf(" %d", c.Violations)
		}
		if c.Stopped != "" {
			n += " stopped"
		}
		if c.Violations > 0 || c.Stopped != "" || total == 0 {
			names = append(names, n)
		}
	}
	return fmt.Sprintf("violations %d (%s)", total, strings.Join(names, ", "))
}

// short writes a duration in whole seconds: "23s" under 100 s, else
// "5m3s", "10m", "2h" (a soak run's limit reads better so).
func short(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d < 100*time.Second {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	s := strings.TrimSuffix(d.String(), "m0s")
	if s != d.String() {
		s += "m"
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
