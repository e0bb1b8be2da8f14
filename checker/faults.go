package checker

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/zkchaos/zkchaos/history"
)

// FaultWindow is one fault of the nemesis as the history shows it: from
// its start's invocation to its stop's completion. The checkers that
// excuse or draw faults (liveness, the porcupine pages) read windows only
// through FaultWindows, so they cannot disagree about when a fault lasted.
type FaultWindow struct {
	// F is the start verb (history.FPause, ...); Stop is its stop verb, ""
	// for an operation that is its own window (the final restore).
	F, Stop string
	// Target describes what the fault acted on: the start's completion's
	// Target when it has one, else its invocation's (the fault's name).
	Target string
	PID    int
	// From is the start's invocation; To is the stop's completion, -1 when
	// the history ends before the fault was undone.
	From, To int64
	// Process is the worker process the fault acted on (client faults:
	// the start's target_process), -1 for faults of the ensemble.
	Process history.Process
}

// targetText is how histories written before target_process existed named
// a client fault's worker in the target's description; it is read only
// when the field is absent, so that re-checking an old run folder gives
// the verdict it had.
var targetText = regexp.MustCompile(`\bprocess (\d+)\b`)

// FaultWindows pairs the nemesis' operations into fault windows. A start
// verb's invocation opens a window; its completion fills in the target
// (and a fail, "nothing was done", drops the window); the completion of
// its stop verb (history.StopVerb) closes the open window of that verb
// with the same PID, else the oldest one that names no PID or is healed
// without one (several faults share a stop verb: heal ends partitions and
// isolations). The
// final restore undoes whatever is left, so its completion closes every
// open window; it and any other operation that is neither a start nor a
// stop is its own window. Session-gone observations are no fault.
func FaultWindows(h []history.Event) []FaultWindow {
	p := pairing{starting: map[string][]int{}}
	for _, e := range h {
		if e.Process == history.Nemesis && e.F != history.FSessionGone {
			p.event(e)
		}
	}
	var out []FaultWindow
	for i, w := range p.ws {
		if !p.dropped[i] {
			out = append(out, w)
		}
	}
	return out
}

type pairing struct {
	ws       []FaultWindow
	dropped  []bool
	open     []int            // indexes of open windows, oldest first
	starting map[string][]int // windows whose start has not completed, by verb
}

func (p *pairing) event(e history.Event) {
	stop, isStart := history.StopVerb(e.F)
	isStop := history.IsFaultStop(e.F) && !isStart
	switch {
	case e.Type == history.Invoke && isStop:
		// The window lasts until the stop completes.
	case e.Type == history.Invoke:
		w := FaultWindow{F: e.F, Stop: stop, From: e.Time, To: -1, Process: -1}
		fill(&w, e.Value)
		p.ws = append(p.ws, w)
		p.dropped = append(p.dropped, false)
		p.open = append(p.open, len(p.ws)-1)
		p.starting[e.F] = append(p.starting[e.F], len(p.ws)-1)
	case isStop:
		p.stopped(e)
	default:
		q := p.starting[e.F]
		if len(q) == 0 {
			return
		}
		i := q[0]
		p.starting[e.F] = q[1:]
		switch {
		case isStart && e.Type == history.Fail:
			p.dropped[i] = true
			p.close(i, e.Time)
		case isStart:
			fill(&p.ws[i], e.Value)
		case e.F == history.FRestore:
			for len(p.open) > 0 {
				p.close(p.open[0], e.Time)
			}
		default:
			p.close(i, e.Time)
		}
	}
}

// stopped closes the oldest open window that e's verb stops, preferring
// the one with e's PID: faults share stop verbs, and a heal names the PID
// of what it healed.
func (p *pairing) stopped(e history.Event) {
	pid := 0
	if e.Value != nil {
		pid = e.Value.PID
	}
	match := -1
	for _, i := range p.open {
		w := p.ws[i]
		if w.Stop != e.F {
			continue
		}
		if pid != 0 && w.PID == pid {
			match = i
			break
		}
		if match < 0 && (pid == 0 || w.PID == 0) {
			match = i
		}
	}
	if match >= 0 {
		p.close(match, e.Time)
	}
}

func (p *pairing) close(i int, t int64) {
	p.ws[i].To = t
	p.open = slices.DeleteFunc(p.open, func(j int) bool { return j == i })
}

// fill takes what an operation's value says about the fault's target.
func fill(w *FaultWindow, v *history.Value) {
	if v == nil {
		return
	}
	if v.Target != "" {
		w.Target = v.Target
	}
	if v.PID != 0 {
		w.PID = v.PID
	}
	switch {
	case v.TargetProcess != nil:
		w.Process = history.Process(*v.TargetProcess)
	case w.Process < 0:
		if m := targetText.FindStringSubmatch(v.Target); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				w.Process = history.Process(n)
			}
		}
	}
}
