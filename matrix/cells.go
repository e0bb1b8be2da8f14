package matrix

import "github.com/zkchaos/zkchaos/checker"

// short is the run length of a cell: long enough for several faults of
// each kind (a pause lasts twice the 3 s session timeout, the interval
// between faults is 2 s), short enough that the matrix stays usable.
var short = []string{"--time-limit", "30s", "--nemesis-interval", "2s"}

func valid(names ...string) map[string]checker.Validity {
	m := map[string]checker.Validity{}
	for _, n := range names {
		m[n] = checker.Valid
	}
	return m
}

func invalid(names ...string) map[string]checker.Validity {
	m := map[string]checker.Validity{}
	for _, n := range names {
		m[n] = checker.Invalid
	}
	return m
}

// Default is the matrix of design section 9: the seed recipe with fencing
// is valid under every fault; without fencing it is caught under holder
// pauses; each known-buggy recipe is caught by the checker that names its
// bug under the fault that exposes it.
func Default() []Cell {
	return []Cell{
		{Recipe: "seed", Nemesis: []string{"none"}, Fencing: "on", Args: short,
			Expect: valid(checker.NameDoubleWriter), Why: "baseline: no faults, nothing to find"},
		{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "on", Args: short, Smoke: true,
			Expect: valid(checker.NameDoubleWriter), Why: "fencing stops the paused holder's stale write"},
		{Recipe: "seed", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: short, Smoke: true,
			Expect: invalid(checker.NameDoubleWriter), Why: "without fencing the paused holder's stale write lands"},
	}
}
