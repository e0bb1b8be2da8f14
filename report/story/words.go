package story

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// sec writes a run-clock time as the stories do: seconds, two decimals.
func sec(ns int64) string { return fmt.Sprintf("%.2f s", float64(ns)/1e9) }

// pn names a worker process as the stories do: p2.
func pn[P ~int](p P) string { return fmt.Sprintf("p%d", int(p)) }

func histRef(index int64) string { return fmt.Sprintf("history #%d", index) }

func seqRef(seq int64) string { return fmt.Sprintf("apply log seq %d", seq) }

// withToken is " with token 17", or " without a token".
func withToken(g grant, word string) string {
	if !g.hasToken {
		return " without a " + word
	}
	return fmt.Sprintf(" with %s %d", word, g.token)
}

// answer is the register's answer to an entry: accepted, or rejected
// with its reason.
func answer(e register.Entry) string {
	if e.Accepted {
		return "accepted"
	}
	if e.Reason != "" {
		return "rejected (" + e.Reason + ")"
	}
	return "rejected"
}

// faultStart and faultEnd say what the nemesis did to begin and end a
// fault, by its verb: "the nemesis paused p2 (pid 4242)".
func faultStart(w checker.FaultWindow) string {
	who := faultTarget(w)
	switch w.F {
	case history.FPause:
		return "the nemesis paused " + who
	case history.FIsolate:
		return "the nemesis cut " + who + " off from every server"
	case history.FExpire:
		return "the nemesis closed the session of " + who + " from outside"
	case history.FKill:
		return "the nemesis killed " + who
	case history.FPartition:
		return "the nemesis partitioned the network (" + w.Target + ")"
	}
	if w.Process < 0 {
		return fmt.Sprintf("the nemesis began %s (%s)", w.F, who)
	}
	return fmt.Sprintf("the nemesis began %s on %s", w.F, who)
}

func faultEnd(w checker.FaultWindow) string {
	who := faultTarget(w)
	switch w.F {
	case history.FPause:
		return "the nemesis resumed " + who
	case history.FIsolate, history.FPartition:
		return "the nemesis healed the network (" + w.F + " of " + who + ")"
	case history.FExpire:
		return "the nemesis' expire fault on " + who + " ended"
	case history.FKill:
		return "the nemesis restarted " + who
	}
	if w.Process < 0 {
		return fmt.Sprintf("the nemesis ended %s (%s)", w.F, who)
	}
	return fmt.Sprintf("the nemesis ended %s on %s", w.F, who)
}

// faultTarget names what a fault acted on: the worker process (with its
// pid), else the nemesis' own description.
func faultTarget(w checker.FaultWindow) string {
	switch {
	case w.Process >= 0 && w.PID != 0:
		return fmt.Sprintf("%s (pid %d)", pn(w.Process), w.PID)
	case w.Process >= 0:
		return pn(w.Process)
	case w.Target != "":
		return w.Target
	}
	return "its target"
}

// instantText says what a worker reported about its session or lock.
func instantText(e lockview.Instant) string {
	v := e.Value
	session := ""
	if v.Session != "" {
		session = " " + v.Session
	}
	if e.F == history.FLost {
		return fmt.Sprintf("%s reported %s lost (%s)", pn(e.Process), e.Key, v.State)
	}
	switch v.State {
	case lockview.StateConnected:
		return fmt.Sprintf("%s reported its session%s connected", pn(e.Process), session)
	case "":
		return fmt.Sprintf("%s reported a session event on its session%s", pn(e.Process), session)
	}
	return fmt.Sprintf("%s reported its session%s %s", pn(e.Process), session, v.State)
}

func goneText(g lockview.Gone) string {
	return fmt.Sprintf("the nemesis saw the session %s of %s gone from every server at %s (last seen alive at %s)",
		g.Session, pn(g.Process), sec(g.Time), sec(g.LastSeenNS))
}

// procName is how a sentence starting with a process name starts; the
// name keeps its case.
var procName = regexp.MustCompile(`^p\d`)

// sentence makes s one sentence: capital first letter (unless it is a
// process name), a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	if !procName.MatchString(s) {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// plural is "1 write" or "5 writes".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// procList names distinct processes in order of appearance: "p5, p1".
func procList(es []register.Entry) string {
	var out []string
	seen := map[int]bool{}
	for _, e := range es {
		if !seen[e.Process] {
			seen[e.Process] = true
			out = append(out, pn(e.Process))
		}
	}
	return strings.Join(out, ", ")
}
