// Package story tells each violation of a run as a short story: what the
// history, the register's apply log and the nemesis' records show, in
// order on the run's clock, from the stale holder's grant through the
// fault that hit it and the newer holder's grant to the write that did the
// damage and what it cost. A verdict says that the data was corrupted; the
// story says how, so that a reader can check it against the raw files
// (each step names the history event or apply-log line it comes from).
//
// A story says only what the records show. When a step that usually
// belongs to such a story is not in the records (no fault targeted the
// stale holder, no session end was seen), the story says so rather than
// guess.
package story

import (
	"fmt"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/resource/register"
)

// DefaultMax is how many violations of each checker are told when
// Input.Max is 0: enough to see every pattern a run shows, few enough that
// an unfenced soak run's page stays readable. The rest are counted.
const DefaultMax = 20

// Step is one thing the records show.
type Step struct {
	// TimeNS is when it happened on the run's clock; Timed is false for a
	// step the records do not place (a missing record), which is ordered
	// after the step told before it.
	TimeNS int64
	Timed  bool
	// Text is the whole sentence, times included ("p2 acquired SKU-3 with
	// token 17 at 5.70 s.").
	Text string
	// Ref names the record the step comes from ("history #12", "apply log
	// seq 7"), empty for a missing one.
	Ref string
	// Mark is set on the step the checker found the violation at (the
	// write, grant or release the timeline marks), the one to link there.
	Mark bool
}

// Story is one violation told.
type Story struct {
	// Checker and Index name the violation: its checker and its index in
	// that checker's list in results.json (see Tell for grant-overlap).
	Checker string
	Index   int
	// Title says what was violated, where, by whom.
	Title string
	Steps []Step
}

// Count says how many of one checker's violations are told.
type Count struct {
	Checker string
	// Total is the checker's exact count; Listed how many results.json
	// lists (the rest were omitted there); Told how many have a story.
	Total, Listed, Told int
	// Note says why none is told (a checker without stories, evidence
	// that cannot be read), empty when they are.
	Note string
}

// Text says the count in a sentence for the page.
func (c Count) Text() string {
	switch {
	case c.Note != "" && c.Total == 0:
		return fmt.Sprintf("%s: %s.", c.Checker, c.Note)
	case c.Note != "":
		return fmt.Sprintf("%s: %s; none of its %s is told.", c.Checker, c.Note, plural(c.Total, "violation"))
	case c.Told == c.Total:
		return fmt.Sprintf("%s: %s, every one told below.", c.Checker, plural(c.Total, "violation"))
	}
	s := fmt.Sprintf("%s: %s; the first %d in results.json are told below", c.Checker, plural(c.Total, "violation"), c.Told)
	if n := c.Listed - c.Told; n > 0 {
		s += fmt.Sprintf(", %d more listed there are not told", n)
	}
	if n := c.Total - c.Listed; n > 0 {
		s += fmt.Sprintf(", %d more were not kept in results.json (the checker's evidence limit)", n)
	}
	return s + "."
}

// Told is every story of a run, in checker order, and the counts.
type Told struct {
	Stories []Story
	Counts  []Count
}

// Input is what the stories are told from: the run's files as the
// checkers read them, and their results.
type Input struct {
	History  []history.Event
	ApplyLog []register.Entry
	// StartWall is the run's start on the wall clock (Unix ns): apply-log
	// Wall - StartWall is the run clock. Zero: writes are placed by the
	// workers' ok in the history instead.
	StartWall int64
	Results   checker.Results
	// Max bounds the stories per checker; 0 means DefaultMax.
	Max int
}

// teller tells the violations of one checker.
type teller struct {
	name string
	tell func(r *records, res checker.Result, limit int) ([]Story, Count, error)
}

// tellers are the checkers whose violations have stories, in page order.
var tellers = []teller{
	{fence.NameDoubleWriter, tellDoubleWriter},
	{lock.NameGrantOverlap, tellGrantOverlap},
	{lock.NameTokenOrder, tellTokenOrder},
	{election.NameStaleTerm, tellStaleTerm},
}

// Tell tells the violations of every checker that has stories, at most
// in.Max each, and counts the rest. Grant-overlap's stories are indexed
// over its overlaps, then its false releases (index len(overlaps)+j).
// Invalid checkers without stories are counted with a note, so that no
// violation is left out silently.
func Tell(in Input) Told {
	limit := in.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	r := newRecords(in)
	var t Told
	for _, tl := range tellers {
		res, ok := in.Results.Checkers[tl.name]
		if !ok || res.Details == nil {
			continue
		}
		ss, c, err := tl.tell(r, res, limit)
		c.Checker, c.Total = tl.name, max(c.Total, c.Listed)
		if err != nil {
			c.Note = fmt.Sprintf("its evidence could not be read: %v", err)
		}
		t.Stories = append(t.Stories, ss...)
		if c.Total > 0 || c.Note != "" {
			t.Counts = append(t.Counts, c)
		}
	}
	for _, name := range untold(in.Results) {
		t.Counts = append(t.Counts, Count{Checker: name, Note: "violations of this checker are not told as stories; see its evidence in results.json"})
	}
	return t
}

// untold lists the invalid checkers that have no teller, in run order.
func untold(res checker.Results) []string {
	var out []string
	for _, name := range res.Names() {
		r, ok := res.Checkers[name]
		if !ok || r.Valid != checker.Invalid || slices.ContainsFunc(tellers, func(t teller) bool { return t.name == name }) {
			continue
		}
		out = append(out, name)
	}
	return out
}
