// Package resilience holds the integration tests of runs under trouble
// from outside: a run starting on the slot another run is still tearing
// down, and a results folder or apply log whose disk fills. The slot race
// needs the machine alone (chaostest.NeedMachineAlone). See tests/core for
// why integration tests are split into packages.
package resilience
