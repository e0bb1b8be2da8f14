// Package shrink finds a smaller scenario that still shows a stored
// run's violations (chaos shrink): fewer schedule entries, shorter holds
// and gaps, a shorter time limit, fewer workers and keys. Each candidate
// is judged by replays (package replay) at a reproduction rate, and only
// one that reproduces at that rate is kept, so the minimal scenario is
// one measured to reproduce, not one guessed.
//
// The search (Shrink) is a function of a Judge, so that it is tested
// without runs; Run gives it the judge that replays each candidate for
// real and writes what it found.
package shrink

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/run/runner"
)

// Scenario is what a candidate runs: the schedule's entries and the
// settings a shrink lowers. Keys 0 is a workload without keys.
type Scenario struct {
	Entries   []nemesis.Entry `json:"-"`
	TimeLimit time.Duration   `json:"time_limit_ns"`
	Workers   int             `json:"workers"`
	Keys      int             `json:"keys,omitempty"`
}

// key identifies s among the candidates already judged.
func (s Scenario) key() string {
	var b strings.Builder
	for _, e := range s.Entries {
		fmt.Fprintf(&b, "%s@%s+%s;", e.Fault, time.Duration(e.Offset), time.Duration(e.Hold))
	}
	fmt.Fprintf(&b, "|%s|%d|%d", s.TimeLimit, s.Workers, s.Keys)
	return b.String()
}

// Rate is the reproduction rate a candidate must meet: Need of Of
// replays.
type Rate struct{ Need, Of int }

// ParseRate reads "2/3": at least 1 of at most 10 replays.
func ParseRate(s string) (Rate, error) {
	n, d, ok := strings.Cut(s, "/")
	need, err1 := strconv.Atoi(n)
	of, err2 := strconv.Atoi(d)
	if !ok || err1 != nil || err2 != nil || need < 1 || of < need || of > 10 {
		return Rate{}, fmt.Errorf("rate %q: want NEED/OF with 1 <= NEED <= OF <= 10, e.g. 2/3", s)
	}
	return Rate{need, of}, nil
}

// DefaultRate is chaos shrink's: two replays of three.
var DefaultRate = Rate{2, 3}

func (r Rate) String() string { return fmt.Sprintf("%d/%d", r.Need, r.Of) }

// Verdict is a candidate's measurement.
type Verdict struct {
	// OK says it reproduced at the rate: Reproduced of Replays (the
	// replays stop once the answer is decided, so Replays may be fewer
	// than the rate's Of).
	OK         bool `json:"ok"`
	Reproduced int  `json:"reproduced"`
	Replays    int  `json:"replays"`
	// ToFirst is the longest time to the first violation among the
	// replays that reproduced (0: not known).
	ToFirst time.Duration `json:"to_first_violation_ns,omitempty"`
	// Run is the folder of a replay that reproduced; Schedule the
	// candidate's schedule file; Args its flags over the settings.
	Run      string   `json:"run,omitempty"`
	Schedule string   `json:"schedule,omitempty"`
	Args     []string `json:"args,omitempty"`
	// Detail says why a candidate has no verdict (its replays could not
	// run, or the budget ended during them).
	Detail string `json:"detail,omitempty"`
}

// Judge measures one candidate. An error means it could not be
// measured; the candidate is then not kept.
type Judge func(ctx context.Context, s Scenario) (Verdict, error)

// Step is one candidate tried: a row of the table.
type Step struct {
	// Step is what it shortens: entries, holds, gaps, time-limit,
	// workers, keys; "original" is the original measured at the end
	// when no candidate was kept.
	Step  string `json:"step"`
	Tried string `json:"tried"`
	Scenario
	Entries int `json:"entries"`
	Verdict
	Kept bool          `json:"kept"`
	Took time.Duration `json:"took_ns"`
}

// Result is what a shrink found: the best scenario and its verdict (nil
// when nothing was measured to reproduce before the budget ended), and
// every step tried.
type Result struct {
	Best    Scenario
	Verdict *Verdict
	Steps   []Step
}

// Floors are the least a shrink tries: a hold or gap below MinHold is
// not halved again, and workers go no lower than MinWorkers (two
// clients are the least that can contend).
const (
	MinHold    = 100 * time.Millisecond
	MinWorkers = 2
)

// state is a shrink under way.
type state struct {
	judge   Judge
	best    Scenario
	verdict *Verdict
	// toFirst is the original's time to its first violation (0: not
	// known), the detection time until a candidate measures its own.
	toFirst time.Duration
	seen    map[string]bool
	steps   []Step
	onStep  func(Step)
}

// Shrink shrinks orig, step by step, each candidate judged by judge:
// (a) schedule entries removed (the entries up to the original's first
// violation, toFirst, with the time limit cut past it; the empty
// schedule; then delta debugging, ddmin); (b) holds, then the gaps
// before entries, shortened while it still reproduces; (c) the time
// limit cut to just past the last entry and the detection time; (d)
// workers, then keys, halved. A candidate is kept when it reproduces,
// and the next is made from it. ctx ending (the budget) stops the
// search with the best so far. onStep, when set, gets each step as it
// ends.
func Shrink(ctx context.Context, orig Scenario, toFirst time.Duration, judge Judge, onStep func(Step)) Result {
	s := &state{judge: judge, best: orig, toFirst: toFirst, seen: map[string]bool{orig.key(): true}, onStep: onStep}
	s.entries(ctx)
	s.holds(ctx)
	s.gaps(ctx)
	s.timeLimit(ctx)
	s.halve(ctx, "workers", func(c *Scenario) *int { return &c.Workers }, MinWorkers)
	s.halve(ctx, "keys", func(c *Scenario) *int { return &c.Keys }, 1)
	if s.verdict == nil && ctx.Err() == nil {
		// Nothing smaller reproduced: the original is the minimal
		// scenario, if it reproduces at the rate itself.
		delete(s.seen, orig.key())
		s.try(ctx, "original", "the original, nothing smaller reproduced", orig)
	}
	return Result{Best: s.best, Verdict: s.verdict, Steps: s.steps}
}

// try judges c as a step; kept (it reproduced) makes it the best.
// A candidate judged before, or any once ctx has ended, is not tried.
func (s *state) try(ctx context.Context, step, tried string, c Scenario) bool {
	if ctx.Err() != nil || s.seen[c.key()] {
		return false
	}
	s.seen[c.key()] = true
	start := time.Now()
	v, err := s.judge(ctx, c)
	if err != nil {
		v.OK, v.Detail = false, err.Error()
	}
	if ctx.Err() != nil {
		// Its last replay was cut short: what it showed is not a
		// measurement at the rate.
		v.OK, v.Detail = false, "interrupted at the budget"
	}
	st := Step{Step: step, Tried: tried, Scenario: c, Entries: len(c.Entries), Verdict: v, Kept: v.OK, Took: time.Since(start)}
	s.steps = append(s.steps, st)
	if s.onStep != nil {
		s.onStep(st)
	}
	if v.OK {
		s.best, s.verdict = c, &v
	}
	return v.OK
}

// with is the best scenario with other entries.
func (s *state) with(entries []nemesis.Entry) Scenario {
	c := s.best
	c.Entries = entries
	return c
}

// entries is step (a). When the original places its first violation,
// the first candidate is the entries that started before it, with the
// time limit cut just past them and it (step (c) early): every later
// candidate then runs that shorter limit, and a candidate that does not
// reproduce runs its whole limit.
func (s *state) entries(ctx context.Context) {
	all := s.best.Entries
	if len(all) == 0 {
		return
	}
	if s.toFirst > 0 {
		i := len(all)
		for i > 0 && time.Duration(all[i-1].Offset) > s.toFirst {
			i--
		}
		c := s.with(all[:i:i])
		c.TimeLimit = min(c.TimeLimit, cutLimit(c.Entries, s.toFirst))
		if (i < len(all) || c.TimeLimit < s.best.TimeLimit) &&
			s.try(ctx, "entries", fmt.Sprintf("the %s before the first violation, time limit %s", count(i, "entry", "entries"), c.TimeLimit), c) {
			all = c.Entries
		}
	}
	if s.try(ctx, "entries", "no entry", s.with([]nemesis.Entry{})) {
		return
	}
	ddmin(ctx, all, func(sub []nemesis.Entry) bool {
		return s.try(ctx, "entries", fmt.Sprintf("%d of %d entries (%s)", len(sub), len(s.best.Entries), describe(sub)), s.with(slices.Clone(sub)))
	})
}

// count is n and the noun, singular or plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// describe names entries by fault and offset.
func describe(es []nemesis.Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s@%s", e.Fault, time.Duration(e.Offset)))
	}
	return strings.Join(out, " ")
}

// holds is the first half of step (b): every hold halved at once, again
// while that reproduces; then, with more than one entry, each on its
// own.
func (s *state) holds(ctx context.Context) {
	for s.try(ctx, "holds", "every hold halved", s.with(halveHolds(s.best.Entries))) {
	}
	if len(s.best.Entries) < 2 {
		return
	}
	for i := range s.best.Entries {
		for s.try(ctx, "holds", fmt.Sprintf("entry %d's hold halved", i+1), s.with(halveHold(s.best.Entries, i))) {
		}
	}
}

// halveHolds halves every hold of es above MinHold (a copy).
func halveHolds(es []nemesis.Entry) []nemesis.Entry {
	out := slices.Clone(es)
	for i := range out {
		out = halveHold(out, i)
	}
	return out
}

// halveHold halves entry i's hold when above MinHold, on a copy; the
// offsets stay.
func halveHold(es []nemesis.Entry, i int) []nemesis.Entry {
	out := slices.Clone(es)
	if h := time.Duration(out[i].Hold); h > MinHold {
		out[i].Hold = nemesis.Duration(max(MinHold, (h / 2).Round(10*time.Millisecond)))
	}
	return out
}

// gaps is the second half of step (b): the quiet time before each entry
// (from the origin, or from the end of the entry before) cut to MinHold
// at once, the cheapest answer when timing does not matter; else halved,
// all at once, again while that reproduces.
func (s *state) gaps(ctx context.Context) {
	if s.try(ctx, "gaps", fmt.Sprintf("every gap before an entry cut to %s", MinHold), s.with(cutGaps(s.best.Entries, 0))) {
		return
	}
	for s.try(ctx, "gaps", "every gap before an entry halved", s.with(cutGaps(s.best.Entries, 2))) {
	}
}

// cutGaps moves each entry earlier (a copy): the gap before it divided
// by div, or down to MinHold for div 0; a gap at or below MinHold stays.
func cutGaps(es []nemesis.Entry, div time.Duration) []nemesis.Entry {
	out := slices.Clone(es)
	var oldEnd, newEnd time.Duration
	for i, e := range es {
		gap := max(0, time.Duration(e.Offset)-oldEnd)
		switch {
		case gap <= MinHold:
		case div == 0:
			gap = MinHold
		default:
			gap = max(MinHold, (gap / div).Round(10*time.Millisecond))
		}
		out[i].Offset = nemesis.Duration(newEnd + gap)
		oldEnd = time.Duration(e.Offset + e.Hold)
		newEnd = time.Duration(out[i].Offset + out[i].Hold)
	}
	return out
}

// timeLimit is step (c): the time limit cut to just past the last
// entry's end and the detection time (cutLimit), then, if that does not
// reproduce, half way back.
func (s *state) timeLimit(ctx context.Context) {
	detect := s.toFirst
	if s.verdict != nil && s.verdict.ToFirst > 0 {
		detect = s.verdict.ToFirst
	}
	if detect <= 0 {
		return // no detection time known: a cut would be a guess
	}
	cut := cutLimit(s.best.Entries, detect)
	for range 2 {
		cur := s.best.TimeLimit
		if cut >= cur-time.Second {
			return
		}
		c := s.best
		c.TimeLimit = cut
		if s.try(ctx, "time-limit", fmt.Sprintf("time limit %s (last entry ends %s, violation %s)", cut, end(c.Entries).Round(time.Millisecond), detect.Round(time.Millisecond)), c) {
			return
		}
		cut = ((cut + cur) / 2).Round(time.Second)
	}
}

// cutLimit is a time limit just past the end of the last of entries and
// the detection time: a quarter and a second more, whole seconds.
func cutLimit(entries []nemesis.Entry, detect time.Duration) time.Duration {
	t := max(end(entries), detect)
	return max(runner.MinTimeLimit, (t + t/4 + time.Second).Round(time.Second))
}

// end is when the last entry's hold ends, with the time to inject it
// (0 for none): the least time limit that holds the entries.
func end(entries []nemesis.Entry) time.Duration {
	last, ok := (&nemesis.Plan{Entries: entries}).Last()
	if !ok {
		return 0
	}
	return time.Duration(last.Offset) + runner.InjectAllowance + time.Duration(last.Hold)
}

// halve is step (d) for one setting: halved, not below floor, while
// that reproduces. A setting at 0 (not the workload's) is left.
func (s *state) halve(ctx context.Context, name string, field func(*Scenario) *int, floor int) {
	for {
		c := s.best
		v := field(&c)
		if *v <= floor {
			return
		}
		*v = max(floor, *v/2)
		if !s.try(ctx, name, fmt.Sprintf("%s %d", name, *v), c) {
			return
		}
	}
}
