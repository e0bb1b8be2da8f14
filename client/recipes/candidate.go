package recipes

import (
	"fmt"
	"slices"
	"strings"
)

// The election workload's candidates. A candidate is a lock recipe (its
// campaign is an acquire of the service's lock under ElectionRoot:
// docs/background.md#leader-election)
// plus the way its leader runs tasks: a Leader policy. Every lock recipe,
// the lock zoo included, is a candidate with the correct policy; the
// election's own zoo adds names whose lock is the seed and whose policy
// has one of the classic leader mistakes switched on (one file each, as the
// lock zoo; docs/zoo.md lists them).

// Leader says how a leader runs a task's work and reports it. The zero
// value is the correct seed behaviour: a task executor must be
// cancellable (docs/background.md#leader-election), and success is the
// resource's fact, not the callback's return
// (docs/background.md#exactly-once-effects).
type Leader struct {
	// KeepWorking: a task's work goes on after leadership is lost, and its
	// call goes out (with the old term) once the work is done; retries of
	// a call whose reply was lost go out too. The correct leader cancels
	// the work the moment it may no longer act, and checks again before
	// every call.
	KeepWorking bool
	// TrustCallback: a complete is reported done once the leader's own
	// callback returned, whatever happened to the task: its work
	// cancelled by a demotion, its call refused for a stale term or never
	// answered. The callback's return taken as the fact.
	TrustCallback bool
}

// candidateZoo are the election-only names, with the seed lock switches
// and the leader policy of each.
var candidateZoo = newRegistry[candidate]("election recipe")

type candidate struct {
	lock   bugs
	leader Leader
}

// registerCandidate registers an election-only zoo recipe: the seed lock
// with switches b, leading with policy l.
func registerCandidate(name string, b bugs, l Leader) {
	b.name = name
	candidateZoo.add(name, candidate{lock: b, leader: l})
}

// CandidateNames lists the election workload's recipes: every lock recipe
// and the election's own zoo, sorted.
func CandidateNames() []string {
	names := append(Names(), candidateZoo.names()...)
	slices.Sort(names)
	return names
}

func init() { RegisterWorkload(WorkloadElection, CandidateNames) }

// NewCandidate builds the candidate registered as name: its lock and its
// leader policy.
func NewCandidate(name string, cfg Config) (Lock, Leader, error) {
	if c, err := candidateZoo.get(name); err == nil {
		l, err := newSeedWithBugs(cfg, c.lock)
		if err != nil {
			return nil, Leader{}, err
		}
		return l, c.leader, nil
	}
	if _, err := lockRecipes.get(name); err != nil {
		return nil, Leader{}, fmt.Errorf("unknown election recipe %q (known: %s)", name, strings.Join(CandidateNames(), ", "))
	}
	l, err := New(name, cfg)
	return l, Leader{}, err
}
