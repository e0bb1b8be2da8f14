package story

import (
	"fmt"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/election"
)

// tellStaleTerm tells the election workload's stale-term violations: a
// deposed leader's task call accepted after a newer leader's is the
// lock's stale write in other words, so it is told as a staleCase with
// campaigns for acquires and terms for tokens. The other election
// checkers (demoted-work, exactly-once, ...) are counted, not told.
func tellStaleTerm(r *records, res checker.Result, limit int) ([]Story, Count, error) {
	var d election.StaleTermDetails
	if err := res.DecodeDetails(&d); err != nil {
		return nil, Count{}, err
	}
	c := Count{Total: d.ViolationCount, Listed: len(d.Violations), Told: min(len(d.Violations), limit)}
	var out []Story
	for i, v := range d.Violations[:c.Told] {
		sc := staleCase{nouns: leaderNouns, key: v.Service, entries: v.Entries,
			stale: grant{v.Process, v.Term, true}, newer: &grant{v.SetByProcess, v.ServiceTerm, true},
			consequence: fmt.Sprintf("the register accepted %s's %s of %s under term %d after it had accepted term %d from %s (seq %d)",
				pn(v.Process), v.Op, v.Task, v.Term, v.ServiceTerm, pn(v.SetByProcess), v.SetBySeq)}
		out = append(out, Story{Checker: election.NameStaleTerm, Index: i,
			Title: fmt.Sprintf("stale term on %s: %s of %s", v.Service, v.Op, v.Task) + ", " + grantNames(sc), Steps: sc.tell(r)})
	}
	return out, c, nil
}
