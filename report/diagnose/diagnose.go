// Package diagnose tells a user why a run's subject could not run: it
// completed no operation, or failed every operation of a kind. It gives
// the first distinct errors the subject reported, the tail of its
// stderr, the protocol version its hello named, and the requirements of
// docs/worker-protocol.md that such errors usually mean. A subject that
// never authenticates otherwise shows up only as cells judged wrong or
// unknown, one after another, with nothing saying that it never held a
// lock. `chaos gate`'s baseline and `chaos run` both read it from here.
package diagnose

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/client/worker"
	"github.com/zkchaos/zkchaos/history"
)

// MinTries is how many operations of a kind must have been invoked, none
// completing ok, for the kind to count as failed: one or two failures of
// a kind in a short run can be the workload's own (an acquire that timed
// out under contention).
const MinTries = 3

// MaxErrors bounds the distinct errors a diagnosis keeps.
const MaxErrors = 5

// Diagnosis is what the records say about whether the subject ran.
type Diagnosis struct {
	// Kinds counts the subject's operations by f, in order of first use.
	Kinds []Kind
	// Nothing: no operation of the subject completed ok.
	Nothing bool
	// Failed are the kinds with at least MinTries invocations and no ok.
	Failed []string
	// Errors are the first MaxErrors distinct errors, in order of first
	// appearance.
	Errors []Error
	// Stderr is the tail of the stderr of the process that reported the
	// first error (of process 0 when none did).
	Stderr Tail
	// Hello says a worker's hello was recorded; Protocol is the version
	// the first one named (0: none).
	Hello    bool
	Protocol int
	// Hints are the protocol requirements the errors usually mean.
	Hints []string
}

// Kind counts one kind of operation: invoked, and completed ok.
type Kind struct {
	F       string
	Invoked int
	OK      int
}

// Error is one distinct error: its first text, and how often errors
// that differ from it only in numbers were reported.
type Error struct {
	F       string
	Type    history.Type
	Text    string
	Count   int
	Process history.Process
	// Time is the run-clock time of the first one (ns).
	Time int64
}

// Tail is the end of one worker process's stderr log.
type Tail struct {
	Process history.Process
	Text    string
}

// Stuck says the subject could not run: the gate stops on it.
func (d Diagnosis) Stuck() bool { return d.Nothing || len(d.Failed) > 0 }

// Of diagnoses a history; stderr gives a worker process's stderr log (""
// when there is none).
func Of(events []history.Event, stderr func(history.Process) string) Diagnosis {
	var d Diagnosis
	d.Kinds, d.Errors = count(events)
	d.Hello, d.Protocol = hello(events)
	ok := 0
	for _, k := range d.Kinds {
		ok += k.OK
		if k.OK == 0 && k.Invoked >= MinTries {
			d.Failed = append(d.Failed, k.F)
		}
	}
	d.Nothing = ok == 0
	if !d.Stuck() {
		return d
	}
	d.Stderr.Process = 0
	if len(d.Errors) > 0 {
		d.Stderr.Process = d.Errors[0].Process
	}
	if stderr != nil {
		d.Stderr.Text = tail(stderr(d.Stderr.Process))
	}
	d.Hints = hints(d)
	return d
}

// subjectOp says e is an operation the subject was asked to do: a
// worker's request, not its unsolicited events, the nemesis' steps or
// the controller's final reads.
func subjectOp(e history.Event) bool {
	return e.Process != history.Nemesis && !checker.IsInstant(e.F) && e.F != history.FFinalRead
}

// count tallies the subject's operations by kind and collects its first
// distinct errors.
func count(events []history.Event) ([]Kind, []Error) {
	var kinds []Kind
	var errs []Error
	seen := map[string]int{} // normalised error -> index in errs
	for _, e := range events {
		if !subjectOp(e) {
			continue
		}
		i := slices.IndexFunc(kinds, func(k Kind) bool { return k.F == e.F })
		if i < 0 {
			kinds, i = append(kinds, Kind{F: e.F}), len(kinds)
		}
		switch e.Type {
		case history.Invoke:
			kinds[i].Invoked++
		case history.OK:
			kinds[i].OK++
		default:
			errs = noteError(errs, seen, e)
		}
	}
	return kinds, errs
}

// digits are the parts of an error text that differ between two
// reports of the same error: ids, tokens, paths' sequence numbers, times.
var digits = regexp.MustCompile(`(0x)?[0-9a-fA-F]*[0-9][0-9a-fA-F]*`)

func noteError(errs []Error, seen map[string]int, e history.Event) []Error {
	text := cmp.Or(strings.TrimSpace(e.Error), "(no error text)")
	key := e.F + "\x00" + string(e.Type) + "\x00" + digits.ReplaceAllString(text, "#")
	if i, ok := seen[key]; ok {
		errs[i].Count++
		return errs
	}
	if len(errs) == MaxErrors {
		return errs
	}
	seen[key] = len(errs)
	return append(errs, Error{F: e.F, Type: e.Type, Text: text, Count: 1, Process: e.Process, Time: e.Time})
}

// hello finds the first worker hello (recorded as a connected session
// carrying the hello's version) and the version it named.
func hello(events []history.Event) (bool, int) {
	for _, e := range events {
		if e.F == history.FSession && e.Type == history.OK && e.Process != history.Nemesis && e.Value != nil && e.Value.State == worker.StateConnected {
			return true, e.Value.Protocol
		}
	}
	return false, 0
}

// tailLines and tailLine bound the stderr shown: enough for a stack
// trace's head or a client library's last complaints.
const (
	tailLines = 12
	tailLine  = 300
)

func tail(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	lines = lines[max(0, len(lines)-tailLines):]
	for i, l := range lines {
		if len(l) > tailLine {
			lines[i] = l[:tailLine] + "…"
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
