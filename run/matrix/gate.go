package matrix

import (
	"cmp"
	"fmt"
	"maps"

	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/workloads"
)

// GateOf is the standard set of cells of a correct subject of the
// workload ("" is the lock, the default), named by recipe (usually
// exec:CMD): the workload's own gate cells (workloads.Spec's GateCells),
// each run for the gate's length with the cell's own flags after. The
// cells marked Smoke are the quick set (chaos gate --quick).
func GateOf(workload, recipe string) ([]Cell, error) {
	spec, err := workloads.Lookup(cmp.Or(workload, workloads.LockName))
	if err != nil {
		return nil, err
	}
	gcs := spec.GateCells()
	if len(gcs) == 0 {
		return nil, fmt.Errorf("the %s workload has no standard gate cells: give your own with %s", spec.Name(), setting.Name("Matrix"))
	}
	// The lock is the cells' default workload: its cells keep names
	// without a workload and runs without --workload.
	name := spec.Name()
	if name == workloads.LockName {
		name = ""
	}
	cells := make([]Cell, 0, len(gcs))
	for _, g := range gcs {
		fencing := "off"
		if g.Fenced {
			fencing = "on"
		}
		cells = append(cells, Cell{Recipe: recipe, Label: "subject", Workload: name, Nemesis: g.Nemesis, Fencing: fencing,
			Variant: g.Variant, Args: withLong(g.Args...), Smoke: g.Quick, Expect: maps.Clone(g.Expect), Why: g.Why})
	}
	return cells, nil
}

// Gate is the lock's standard set (GateOf): a lock client valid without
// faults and, fenced, under every fault; unfenced, caught where a stale
// write lands.
func Gate(recipe string) []Cell {
	cells, err := GateOf("", recipe)
	if err != nil {
		panic(err) // the lock registers its cells from its own file
	}
	return cells
}

// GateQuick is the smallest gate that still proves something, for a job
// on every pull request: the client is correct without faults, and the
// harness sees its writes (unfenced, a paused holder's write lands).
func GateQuick(recipe string) []Cell { return Smoke(Gate(recipe)) }
