package progress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Tracker is a run's live status, kept in memory from what the run does:
// the events it records (Recorder), its phases, and the online checks of
// its apply log (Follow). The runner feeds it; a Display reads it. A nil
// *Tracker takes everything and does nothing, so the runner needs no
// branches for a run shown nowhere.
type Tracker struct {
	mu     sync.Mutex
	now    func() time.Time
	start  time.Time // the run's start
	phase  string
	wStart time.Time // the workload's start (zero before it)
	wEnd   time.Time // its end (zero while it lasts)
	limit  time.Duration
	ok     int
	fail   int
	info   int
	fault  string
	target int
	faults int
	byF    map[string]*OpCount
	online []Count

	// hist hands the recorded events, in history order (recMu), to the
	// online checks of the history (Follow); see enqueue.
	recMu     sync.Mutex
	hist      chan history.Event
	histState atomic.Int32
	rec       history.Recorder
}

// States of the history queue.
const (
	histBuffering = iota // until Follow starts, or says there is nothing to check
	histOff              // no online check reads the history
	histFull             // the checks fell behind: they stopped, events are dropped
)

// histQueue is how many recorded events may wait for the online checks
// of the history: enough for seconds of a busy run (a few thousand
// events a second), about 10 MB at most.
const histQueue = 1 << 16

// NewTracker starts tracking a run that starts now. It has nothing to
// show until the run enters its first phase: a run refused for bad input
// never does, and its error must be the first line it prints.
func NewTracker() *Tracker {
	t := &Tracker{now: time.Now, target: -1, hist: make(chan history.Event, histQueue)}
	t.start = t.now()
	return t
}

// Phase records that the run entered phase p; leaving the workload stops
// its clock.
func (t *Tracker) Phase(p string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.phase == "workload" && p != "workload" && t.wEnd.IsZero() {
		t.wEnd = t.now()
	}
	t.phase = p
}

// Workload records that the workload starts now, for limit.
func (t *Tracker) Workload(limit time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase, t.wStart, t.limit = "workload", t.now(), limit
}

// Recorder is r, telling the tracker of every event it records: the op
// counts and the fault come from the run's own memory, not from
// re-reading history.jsonl.
func (t *Tracker) Recorder(r history.Recorder) history.Recorder {
	if t == nil {
		return r
	}
	t.mu.Lock()
	t.rec = r
	t.mu.Unlock()
	return tee{r, t}
}

type tee struct {
	history.Recorder
	t *Tracker
}

// Append records e and passes it on to the tracker. The queue to the
// online checks gets the events in the order of their index: Append and
// enqueue happen under one lock (the writer serialises its appends
// anyway).
func (w tee) Append(e history.Event) (history.Event, error) {
	w.t.recMu.Lock()
	e, err := w.Recorder.Append(e)
	if err == nil {
		w.t.enqueue(e)
	}
	w.t.recMu.Unlock()
	if err == nil {
		w.t.Observe(e)
	}
	return e, err
}

// enqueue hands a recorded event to the online checks of the history
// without ever blocking the recorder: when the queue is full (the checks
// fell more than histQueue events behind) they stop, since a gap would
// pair the history wrongly, and the line says so; the run goes on and
// the full check after it judges the history.
func (t *Tracker) enqueue(e history.Event) {
	if t.histState.Load() != histBuffering {
		return
	}
	select {
	case t.hist <- e:
	default:
		t.histState.Store(histFull)
	}
}

// Observe counts a recorded event: a client's completed operation (not
// the instant ones, which are observations, not operations), or a step of
// a fault (its start's invocation names the fault, its start's completion
// the target process, its stop's completion ends it).
func (t *Tracker) Observe(e history.Event) {
	if t == nil || e.Type == history.Invoke && e.Process != history.Nemesis {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Process != history.Nemesis {
		if checker.IsInstant(e.F) {
			return
		}
		t.countOp(e)
		return
	}
	switch {
	case history.IsFaultStart(e.F) && e.Type == history.Invoke:
		t.fault, t.target = "", -1
		if e.Value != nil {
			t.fault = e.Value.Target // the scheduler names the fault here
		}
	case history.IsFaultStart(e.F) && e.Type == history.Fail:
		t.fault, t.target = "", -1 // nothing was done
	case history.IsFaultStart(e.F):
		t.faults++
		if e.Value != nil && e.Value.TargetProcess != nil {
			t.target = *e.Value.TargetProcess
		}
	case history.IsFaultStop(e.F) && e.Type != history.Invoke:
		t.fault, t.target = "", -1
	}
}

// countOp counts a client's completion, in all and by its operation.
func (t *Tracker) countOp(e history.Event) {
	if t.byF == nil {
		t.byF = map[string]*OpCount{}
	}
	c := t.byF[e.F]
	if c == nil {
		c = &OpCount{F: e.F}
		t.byF[e.F] = c
	}
	switch e.Type {
	case history.OK:
		t.ok++
		c.OK++
	case history.Fail:
		t.fail++
		c.Fail++
	case history.Info:
		t.info++
		c.Info++
	}
}

// ops are the counts by operation, sorted by its name.
func (t *Tracker) ops() []OpCount {
	out := make([]OpCount, 0, len(t.byF))
	for _, c := range t.byF {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b OpCount) int { return strings.Compare(a.F, b.F) })
	return out
}

// Status is the run's status now.
func (t *Tracker) Status() (Status, bool) {
	if t == nil {
		return Status{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.phase == "" {
		return Status{}, false
	}
	s := Status{Phase: t.phase, Limit: t.limit, OK: t.ok, Fail: t.fail, Info: t.info,
		Fault: t.fault, Target: t.target, Faults: t.faults, Ops: t.ops(), Online: slices.Clone(t.online)}
	now := t.now()
	switch {
	case t.wStart.IsZero():
		s.Elapsed = now.Sub(t.start)
	case !t.wEnd.IsZero():
		s.Elapsed = t.wEnd.Sub(t.wStart)
	default:
		s.Elapsed = now.Sub(t.wStart)
	}
	return s, true
}

// FollowOption adjusts Follow.
type FollowOption func(*followOpts)

type followOpts struct {
	fencing string
	// given: Fencing was passed. The double-writer drops fenced-off
	// grants only then: assuming a fence that was not there would hide
	// an interleaving.
	given bool
}

// Fencing is the run's fencing mode (register.ModeOn by default), which
// the wrong-token check needs (in strict mode a second write under one
// grant is rejected by design) and which lets the double-writer forget
// grants the register has fenced off, so a fenced soak's memory stays
// flat.
func Fencing(mode string) FollowOption {
	return func(o *followOpts) { o.fencing, o.given = mode, true }
}

// Follow runs the online checks among names (the run's checkers) while
// the run lasts, until ctx ends: those of the apply log at path as the
// register appends it, and those of the history as it is recorded
// (Recorder). It logs each checker's first violation with how long after
// it happened it was found; first, when not nil, is told the checker's
// name then (chaos run --stop-at-first ends the workload on it). An
// online check that stops (the log is damaged, the history checks fell
// behind) says so on the line and in the error; the run goes on, and the
// full check after it judges the logs.
func (t *Tracker) Follow(ctx context.Context, path string, names []string, log *slog.Logger, first func(checker string), opts ...FollowOption) error {
	if t == nil {
		return nil
	}
	o := followOpts{fencing: register.ModeOn}
	for _, opt := range opts {
		opt(&o)
	}
	dwMode := register.ModeOff
	if o.given {
		dwMode = o.fencing
	}
	feeds, hist := onlineFeeds(names, dwMode), historyFeeds(names, o.fencing)
	if len(hist) == 0 {
		t.histState.Store(histOff)
	}
	if len(feeds)+len(hist) == 0 {
		return nil
	}
	t.mu.Lock()
	base := len(t.online)
	for _, f := range feeds {
		t.online = append(t.online, Count{Name: f.name})
	}
	for _, h := range hist {
		t.online = append(t.online, Count{Name: h.Name()})
	}
	t.mu.Unlock()
	herr := make(chan error, 1)
	go func() { herr <- t.followHistory(ctx, hist, base+len(feeds), log, first) }()
	var err error
	if len(feeds) > 0 {
		err = register.Follow(ctx, path, followPoll, func(e *register.Entry) {
			for i, f := range feeds {
				if n, what := f.add(e); n > 0 {
					t.found(base+i, n, log, first, "violation", what, "seq", e.Seq,
						"after_commit", time.Since(time.Unix(0, e.Wall)).Round(time.Millisecond).String())
				}
			}
		})
		if err != nil {
			t.stopped(base, base+len(feeds), err)
			err = fmt.Errorf("online checks: %w", err)
		}
		return errors.Join(err, <-herr)
	}
	return <-herr // followHistory returns when ctx ends, or when it stops
}

// found counts n violations of online check i and, at its first, logs
// what and tells first.
func (t *Tracker) found(i, n int, log *slog.Logger, first func(string), attrs ...any) {
	t.mu.Lock()
	t.online[i].Violations += n
	firstOne := t.online[i].Violations == n
	name := t.online[i].Name
	t.mu.Unlock()
	if !firstOne {
		return
	}
	log.Info("online check: first violation", append([]any{"checker", name}, attrs...)...)
	if first != nil {
		first(name)
	}
}

// stopped marks online checks [from, to) stopped by err.
func (t *Tracker) stopped(from, to int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := from; i < to; i++ {
		t.online[i].Stopped = err.Error()
	}
}

// followPoll is how often Follow looks for new apply-log lines: a
// violation is on the line within about this plus one redraw.
const followPoll = 100 * time.Millisecond
