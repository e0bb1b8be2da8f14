package matrix

import (
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/checker/lock"
)

// gateValid are the checkers a correct lock client must satisfy in every
// fenced gate cell: the resource checkers plus the lock-level ones that
// judge the client itself (two holders, tokens out of order, a waiter
// never served). Herd is reported, never judged: a worker need not report
// its wake-ups (docs/worker-protocol.md), so its silence proves nothing.
var gateValid = append([]string{lock.NameGrantOverlap, lock.NameTokenOrder, lock.NameLiveness}, resource...)

// Gate is the standard set of cells for a correct lock client named by
// recipe (usually exec:CMD): valid without faults and, fenced, under every
// fault of the nemesis; unfenced, caught under pause-holder and
// expire-holder, which proves the harness sees the client's writes (a
// subject whose writes never reach the resource would pass every fenced
// cell). The cells marked Smoke are the quick set (GateQuick).
func Gate(recipe string) []Cell {
	cells := []Cell{{Recipe: recipe, Label: "subject", Nemesis: []string{"none"}, Fencing: "on", Args: long, Smoke: true,
		Expect: valid(gateValid...), Why: "baseline: no faults, nothing to find"}}
	for _, f := range faults {
		cells = append(cells, Cell{Recipe: recipe, Label: "subject", Nemesis: []string{f}, Fencing: "on", Args: long,
			Expect: valid(gateValid...), Why: "a correct lock, fenced, stays correct under " + f})
	}
	return append(cells,
		Cell{Recipe: recipe, Label: "subject", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: long, Smoke: true,
			Expect: invalid(fence.NameDoubleWriter), Why: "without fencing the paused holder's stale write lands: the harness sees the client's writes"},
		Cell{Recipe: recipe, Label: "subject", Nemesis: []string{"expire-holder"}, Fencing: "off", Args: long,
			Expect: invalid(fence.NameDoubleWriter), Why: "without fencing the expired holder's write lands after the new holder's"},
	)
}

// GateQuick is the smallest gate that still proves something, for a job
// on every pull request: the client is correct without faults, and the
// harness sees its writes (unfenced, a paused holder's write lands).
func GateQuick(recipe string) []Cell { return Smoke(Gate(recipe)) }
