// Package checker is the core of the checkers: what a checker is given
// (Input), what it answers (Result, Validity), and how a set of checkers
// is run and merged into a run's verdict (Run, Results, results.json).
// The checkers themselves live in sub-packages, one per question,
// and checker/suite assembles them; this package
// imports none of them.
//
// Every checker answers true, false or "unknown". The run's verdict is the
// worst answer among the gating checkers, with Jepsen's order false >
// unknown > true: a corrupted resource must never be hidden by a checker
// that could not decide, and a checker that could not decide (it panicked,
// ran out of time, or lacked the data) must never count as a pass.
package checker

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// Input is everything a checker may look at.
type Input struct {
	History  []history.Event
	ApplyLog []register.Entry
	// StartWall is the run's start on the wall clock (Unix ns), so that
	// apply-log Wall times can be placed on the run's timeline. Zero means
	// not known.
	StartWall int64
	// Budget bounds each checker's run time; a checker over budget is
	// unknown. Zero means only ctx bounds it.
	Budget time.Duration
	// Fencing is the register's mode in the run (test.json "fencing"); the
	// register model depends on it.
	Fencing string
	// Dir is the run folder, where checkers may save pages (porcupine's
	// visualisations); empty means save nothing.
	Dir string
	// MaxViolations bounds the violations kept as evidence per checker
	// (counts stay exact), so that an unfenced soak run cannot produce a
	// results.json nobody can open. 0 means DefaultMaxViolations; negative
	// means no bound.
	MaxViolations int
	// Completion says whether the run finished; nil means not judged (a
	// hand-made history). runner.Check always sets it.
	Completion *Completion
	// SessionTimeout is the ZooKeeper session timeout the workers asked
	// for (test.json): the config workload's convergence bound derives
	// from it, since a client cut off for up to two session timeouts may
	// rightly not have seen a change yet. Zero means not known; a checker
	// that needs it is then unknown.
	SessionTimeout time.Duration
}

// DefaultMaxViolations is the evidence kept when Input.MaxViolations is 0.
const DefaultMaxViolations = 10000

// Limit is how many violations a checker keeps as evidence (see
// MaxViolations).
func (in Input) Limit() int {
	switch {
	case in.MaxViolations == 0:
		return DefaultMaxViolations
	case in.MaxViolations < 0:
		return int(^uint(0) >> 1)
	}
	return in.MaxViolations
}

// Checker is one named check. Check should watch ctx in long loops; if it
// does not return in time it is reported unknown anyway.
type Checker struct {
	Name  string
	Check func(ctx context.Context, in Input) Result
	// Always makes the checker gate whatever the gate says: a checker of
	// the data itself (integrity), since no verdict can be better than
	// the data it rests on.
	Always bool
	// SoFar, when set, judges the records of a run that is still going:
	// the history as written so far and the apply log read after it (so
	// every completion in the history has its entry). Its Invalid means
	// the records already break the checker's rule in a way no later
	// record takes back, so the run may stop there (the runner's
	// StopAtFirst); Valid and Unknown decide nothing. It is a signal: the
	// stopped run is judged by Check, and a stop that Check does not
	// confirm leaves the run unknown, never valid (Completion). nil: the
	// question needs the whole run (a measure over it, or its end state).
	SoFar func(ctx context.Context, in Input) Result
}

// ValidateGate rejects a gate naming a checker that is not in cs, which
// would otherwise make every run unknown (or, worse, silently ungated).
func ValidateGate(names []string, cs []Checker) error {
	for _, n := range names {
		if !slices.ContainsFunc(cs, func(c Checker) bool { return c.Name == n }) {
			known := make([]string, 0, len(cs))
			for _, c := range cs {
				known = append(known, c.Name)
			}
			return fmt.Errorf("unknown gating checker %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
}

// Run runs the checkers cs concurrently and merges the gating ones: those
// the gate names and those that always gate (Results.Gate stays the gate
// asked for; each result says whether it gated). It always returns a
// verdict: crashes, overruns and cancellation become
// unknown results, and a gate naming an absent checker makes the verdict
// unknown (call ValidateGate first to refuse such a gate up front). An
// empty gate is unknown too: nothing was asked, so nothing passed; the
// caller picks the default gate (checker/suite does).
func Run(ctx context.Context, in Input, gate []string, cs []Checker) Results {
	start := time.Now()
	gate = slices.Clone(gate)
	res := Results{Gate: gate, Checkers: make(map[string]Result, len(cs)), CheckedAt: start.UTC()}
	type done struct {
		i int
		r Result
	}
	ch := make(chan done, len(cs))
	for i, c := range cs {
		go func() { ch <- done{i, runOne(ctx, c, in)} }()
	}
	for range cs {
		d := <-ch
		res.Checkers[cs[d.i].Name] = d.r
	}
	for _, c := range cs {
		res.Order = append(res.Order, c.Name)
	}
	var vs []Validity
	if len(gate) == 0 {
		vs = append(vs, Unknown)
		res.Reasons = append(res.Reasons, "no gating checker was named")
	}
	gating := slices.Clone(gate)
	for _, c := range cs {
		if c.Always && !slices.Contains(gating, c.Name) {
			gating = append(gating, c.Name)
		}
	}
	for _, name := range gating {
		r, ok := res.Checkers[name]
		if !ok {
			vs = append(vs, Unknown)
			res.Reasons = append(res.Reasons, fmt.Sprintf("%s: gating checker does not exist", name))
			continue
		}
		r.Gating = true
		res.Checkers[name] = r
		vs = append(vs, r.Valid)
		if r.Valid != Valid {
			why := r.Valid.String()
			if r.Error != "" {
				why += ": " + r.Error
			}
			res.Reasons = append(res.Reasons, fmt.Sprintf("%s: %s", name, why))
		}
	}
	res.Valid = Merge(vs...)
	applyCompletion(&res, in.Completion)
	res.ElapsedMS = float64(time.Since(start)) / float64(time.Millisecond)
	return res
}

// runOne isolates a checker: its panic, or its failure to return within
// the budget, becomes an unknown result instead of taking the run down or
// hanging it. A checker that ignores ctx keeps running in the background
// until it returns; its answer is discarded.
//
// When ctx ends, the checker gets a short grace to hand in its own answer,
// because one that watches ctx (the porcupine checkers) then returns an
// unknown with its evidence: which keys were decided, which were not. An
// answer of true that arrives after the budget still counts as unknown.
func runOne(ctx context.Context, c Checker, in Input) Result {
	if in.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.Budget)
		defer cancel()
	}
	start := time.Now()
	out := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				out <- Result{Valid: Unknown, Error: fmt.Sprintf("checker panicked: %v", p),
					Details: map[string]string{"stack": string(debug.Stack())}}
			}
		}()
		out <- c.Check(ctx, in)
	}()
	var r Result
	select {
	case r = <-out:
	case <-ctx.Done():
		over := Result{Valid: Unknown, Error: fmt.Sprintf("checker did not finish: %v", context.Cause(ctx))}
		t := time.NewTimer(grace(in.Budget))
		select {
		case r = <-out:
			if r.Valid == Valid {
				over.Details = r.Details
				r = over
			}
		case <-t.C:
			r = over
		}
		t.Stop()
	}
	if r.Valid != Valid && r.Error == "" {
		// Every answer but true must say why, in results.json and on
		// stdout; a checker that forgets is a bug, said as such.
		r.Error = fmt.Sprintf("%s without a reason (a bug in checker %s)", r.Valid, c.Name)
	}
	r.Elapsed = time.Since(start)
	return r
}

// grace is how long runOne waits for a checker's own answer after its
// budget: a tenth of the budget, between 100 ms and 2 s.
func grace(budget time.Duration) time.Duration {
	return min(2*time.Second, max(100*time.Millisecond, budget/10))
}

// Cancelled is how a checker gives up when its context ends.
func Cancelled(ctx context.Context) Result {
	return Result{Valid: Unknown, Error: fmt.Sprintf("checker did not finish: %v", context.Cause(ctx))}
}

// Keep lists x in *list while the list is shorter than limit and counts
// it in *omitted otherwise: every checker shows its first findings in
// full and says how many more there were, so evidence never grows
// without bound and nothing is dropped silently.
func Keep[T any](list *[]T, omitted *int, x T, limit int) {
	if len(*list) < limit {
		*list = append(*list, x)
		return
	}
	*omitted++
}

// Earliest keeps the earlier of a first-violation time and t, for the
// first_violation_time_ns every violation-finding checker reports.
func Earliest(cur *int64, t int64) *int64 {
	if cur == nil || t < *cur {
		return &t
	}
	return cur
}

// IsInstant reports whether f is recorded as an instant operation (an
// invoke and an ok at once) that its process may report while it has a
// real operation in flight, so it pairs on its own: a worker's session,
// lost and late events, the nemesis' session-gone observations, a
// config client's applied events (its watch fires whenever the config
// changes, whatever it is doing), and a leader's demoted events (it may
// learn of its demotion in the middle of a task call).
func IsInstant(f string) bool {
	return f == history.FSession || f == history.FLost || f == history.FLate || f == history.FSessionGone ||
		f == history.FApplied || f == history.FDemoted
}

// Seconds writes a run-clock time (ns) for messages: 12.345s.
func Seconds(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
