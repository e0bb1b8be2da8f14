package matrix

import "github.com/zkchaos/zkchaos/checker/fence"

// kazooFaults are the faults aimed at a client (the holder or any
// worker): the ones a client library's handling of its session answers
// for. "all" mixes them with every server fault.
var kazooFaults = []string{"pause-holder", "pause-worker", "expire-holder", "isolate-holder", "all"}

// kazooCells are the Python subject's rows: kazoo's Lock recipe
// behind the worker protocol (subjects/kazoo) is valid fenced under every
// client fault and under every fault mixed; without fencing the paused
// holder's stale write is caught, as for the Go and Java subjects.
func kazooCells() []Cell {
	var cells []Cell
	for _, f := range kazooFaults {
		cells = append(cells, Cell{Recipe: "kazoo", Nemesis: []string{f}, Fencing: "on", Args: short,
			Smoke: f == "pause-holder", Expect: valid(resource...),
			Why: "kazoo's Lock (Python): fencing keeps the data safe under " + f})
	}
	return append(cells, Cell{Recipe: "kazoo", Nemesis: []string{"pause-holder"}, Fencing: "off", Args: short,
		Expect: invalid(fence.NameDoubleWriter), Why: "kazoo's Lock (Python) without fencing: the paused holder's stale write lands"})
}
