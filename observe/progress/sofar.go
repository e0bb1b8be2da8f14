package progress

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"time"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
	"github.com/zkchaos/zkchaos/resource/register"
)

// The checks of the run so far: a checker without an online version
// that can still judge a run while it goes (checker.Checker's SoFar) is
// run, every look, on the records written so far, so that a run asked to
// stop at its first violation (runner's StopAtFirst) stops there
// whatever the checker. Looking again costs a read of the records, more
// than an online check's entry by entry, so it is done only to stop a
// run.

// soFarEvery is the shortest wait between two looks at the run so far: a
// violation is found within about this, which is what a stop needs (the
// faults that make one come seconds apart).
const soFarEvery = time.Second

// soFarShare bounds what the looks cost: the wait after a look is at
// least this many times as long as the look took, so they take at most
// a twentieth of a core however long the records grow (a soak's).
const soFarShare = 20

// CanStop says whether a run can stop at the first violation of the
// checker named: it has an online version (Online), or it judges a run
// still going (its SoFar, among cs: the workload's checkers).
func CanStop(cs []checker.Checker, name string) bool {
	if Online(name) {
		return true
	}
	i := slices.IndexFunc(cs, func(c checker.Checker) bool { return c.Name == name })
	return i >= 0 && cs[i].SoFar != nil
}

// SoFarChecks are the checkers among cs named in gate that judge a run
// still going and have no online version (which finds the same sooner,
// and at a smaller cost): those FollowSoFar runs.
func SoFarChecks(cs []checker.Checker, gate []string) []checker.Checker {
	var out []checker.Checker
	for _, c := range cs {
		if c.SoFar != nil && !Online(c.Name) && slices.Contains(gate, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// Records are the files of a run that its checks so far read, and the
// run's settings they need (Input's StartWall, Fencing and
// SessionTimeout; its records are read at each look).
type Records struct {
	History  string
	ApplyLog string
	Input    checker.Input
}

// read is the run so far: the history as written, then the apply log,
// read after it so that each answer in the history has the entry it
// rests on (the register writes an entry before it answers). An apply
// log not there yet is empty.
func (r Records) read() (checker.Input, error) {
	in := r.Input
	h, err := history.ReadFile(r.History)
	if err != nil {
		return in, err
	}
	in.History = h.Events
	log, err := register.ReadApplyLog(r.ApplyLog)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return in, err
	}
	in.ApplyLog = log
	return in, nil
}

// FollowSoFar judges the run so far with each of checks' SoFar
// (SoFarChecks) until ctx ends: a look every soFarEvery at least, and at
// least soFarShare times as long as the last look took. Each checker's
// first Invalid is counted on the line, logged and told to first, as
// Follow's online checks are; its count is then the violations of the
// records so far. Records that cannot be read stop the looks, which the
// line and the error say; the run goes on, and the full check after it
// judges the records.
func (t *Tracker) FollowSoFar(ctx context.Context, recs Records, checks []checker.Checker, log *slog.Logger, first func(checker string)) error {
	if t == nil || len(checks) == 0 {
		return nil
	}
	t.mu.Lock()
	base := len(t.online)
	soFar := make([]checker.Checker, len(checks))
	gate := make([]string, len(checks))
	for i, c := range checks {
		t.online = append(t.online, Count{Name: c.Name})
		soFar[i] = checker.Checker{Name: c.Name, Check: c.SoFar}
		gate[i] = c.Name
	}
	t.mu.Unlock()
	for {
		start := time.Now()
		if err := t.lookSoFar(ctx, recs, soFar, gate, base, log, first); err != nil {
			t.stopped(base, base+len(checks), err)
			return fmt.Errorf("checks of the run so far: %w", err)
		}
		if !ctxsleep.Sleep(ctx, max(soFarEvery, soFarShare*time.Since(start))) {
			return nil
		}
	}
}

// lookSoFar reads the records once and judges them with each check.
func (t *Tracker) lookSoFar(ctx context.Context, recs Records, soFar []checker.Checker, gate []string, base int, log *slog.Logger, first func(string)) error {
	in, err := recs.read()
	if err != nil {
		return err
	}
	// The line needs a count and the log the first violation: no more
	// evidence than that.
	in.MaxViolations = 1
	res := checker.Run(ctx, in, gate, soFar)
	for i, c := range soFar {
		r := res.Checkers[c.Name]
		if r.Valid != checker.Invalid || ctx.Err() != nil {
			continue
		}
		n := 0
		for _, k := range checker.Tally(r) {
			n += k
		}
		t.foundSoFar(base+i, max(n, 1), log, first, "violation", r.Error)
	}
	return nil
}

// foundSoFar sets online check i's count to n, the violations of the
// records so far, and at its first logs what and tells first.
func (t *Tracker) foundSoFar(i, n int, log *slog.Logger, first func(string), attrs ...any) {
	t.mu.Lock()
	more := n - t.online[i].Violations
	t.mu.Unlock()
	if more > 0 {
		t.found(i, more, log, first, attrs...)
	}
}
