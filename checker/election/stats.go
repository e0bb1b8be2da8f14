package election

import (
	"context"
	"slices"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/lockview"
	"github.com/zkchaos/zkchaos/history"
)

// Spread summarises durations in milliseconds.
type Spread struct {
	Count  int     `json:"count"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// spreadOf summarises durations in ns (the lower median for an even
// count).
func spreadOf(ns []int64) Spread {
	if len(ns) == 0 {
		return Spread{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	ms := func(v int64) float64 { return float64(v) / 1e6 }
	return Spread{Count: len(s), Min: ms(s[0]), Median: ms(s[(len(s)-1)/2]), Max: ms(s[len(s)-1])}
}

// Counts counts an operation's completions; one never completed counts
// as info.
type Counts struct {
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
}

// StatsDetails is the evidence of election-stats; it informs and never
// fails a run.
type StatsDetails struct {
	Ops         map[string]Counts `json:"ops"`
	Leaderships int               `json:"leaderships"`
	// LeaderChanges counts leaderships whose process is not the previous
	// leader's.
	LeaderChanges int `json:"leader_changes"`
	Terms         int `json:"terms"`
	// EndedBy counts how leaderships ended; Demotions the demoted events
	// by reason.
	EndedBy   map[string]int `json:"ended_by"`
	Demotions map[string]int `json:"demotions"`
	// TakeoverMS runs from the moment no process led any more (the last
	// leader's leadership ended) to the next campaign ok.
	TakeoverMS Spread `json:"takeover_ms"`
	// StaleRunMS runs, per deposed leader that kept completing tasks,
	// from its deposition (its demoted event, or the campaign ok of a
	// newer term, whichever came first) to the answer of its last
	// accepted complete under its old term; StaleCompletes counts those
	// completes.
	StaleRunMS     Spread `json:"stale_run_ms"`
	StaleCompletes int    `json:"stale_completes"`
}

// CheckStats reports the election's figures: how often leadership moved,
// how long the service was leaderless at each takeover, and how long old
// leaders went on running tasks after they were deposed.
func CheckStats(ctx context.Context, in checker.Input) checker.Result {
	v := lockview.Of(in.History)
	ls := Leaderships(v)
	d := StatsDetails{Ops: opCounts(v), Leaderships: len(ls), EndedBy: map[string]int{}, Demotions: map[string]int{}}
	terms := map[int64]bool{}
	for i, l := range ls {
		d.EndedBy[l.Ended]++
		if l.Term != nil {
			terms[*l.Term] = true
		}
		if i > 0 && l.Process != ls[i-1].Process {
			d.LeaderChanges++
		}
	}
	d.Terms = len(terms)
	for _, e := range v.Instants {
		if e.F == history.FDemoted && e.Value != nil {
			d.Demotions[e.Value.State]++
		}
	}
	if ctx.Err() != nil {
		return checker.Cancelled(ctx)
	}
	d.TakeoverMS = spreadOf(takeovers(ls, v.End))
	runs, n := staleRuns(v, ls)
	d.StaleRunMS, d.StaleCompletes = spreadOf(runs), n
	return checker.Result{Valid: checker.Valid, Details: d}
}

// opCounts counts the workers' operations by f.
func opCounts(v lockview.View) map[string]Counts {
	out := map[string]Counts{}
	for _, o := range v.Ops {
		c := out[o.F]
		switch o.Type {
		case history.OK:
			c.OK++
		case history.Fail:
			c.Fail++
		default:
			c.Info++
		}
		out[o.F] = c
	}
	return out
}

// takeovers are the leaderless gaps that a campaign ok ended: from the
// end of the last leadership (when no other was running) to the next
// start. The first election is no takeover.
func takeovers(ls []Leadership, end int64) []int64 {
	var out []int64
	var covered int64
	for i, l := range ls {
		if i > 0 && l.FromNS >= covered && covered < end {
			out = append(out, l.FromNS-covered)
		}
		covered = max(covered, l.ToNS)
	}
	return out
}

// staleRuns measures, per leadership whose process kept completing tasks
// under its term after it was deposed, how long it went on.
func staleRuns(v lockview.View, ls []Leadership) ([]int64, int) {
	var runs []int64
	n := 0
	for _, l := range ls {
		if l.Term == nil {
			continue
		}
		at, ok := deposedAt(l, ls)
		if !ok {
			continue
		}
		last := int64(-1)
		for _, o := range v.Ops {
			if o.Process != l.Process || o.F != history.FComplete || o.Type != history.OK || o.Done <= at {
				continue
			}
			if o.Invoked == nil || o.Invoked.Token == nil || *o.Invoked.Token != *l.Term {
				continue
			}
			n++
			last = max(last, o.Done)
		}
		if last >= 0 {
			runs = append(runs, last-at)
		}
	}
	return runs, n
}

// deposedAt is when l's leader was deposed: its demoted event, or the
// campaign ok of a higher term by another process, whichever came first.
func deposedAt(l Leadership, ls []Leadership) (int64, bool) {
	at, ok := int64(0), false
	if l.Ended == EndDemoted {
		at, ok = l.ToNS, true
	}
	for _, m := range ls {
		if m.Process != l.Process && m.Term != nil && *m.Term > *l.Term && m.FromNS >= l.FromNS {
			if !ok || m.FromNS < at {
				at, ok = m.FromNS, true
			}
			break
		}
	}
	return at, ok
}
