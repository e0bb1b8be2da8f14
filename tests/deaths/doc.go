// Package deaths is the death campaign: real runs killed at random
// moments of every phase (setup, a fault's inject, hold and undo, the
// final phase, teardown, the check) in one of three ways (the controller
// alone, the controller and its janitor together, the whole process
// tree at once), each followed by the check that nothing of the run is
// left within a bound, that `chaos check` calls a run killed before its
// check incomplete and never valid, and one killed during its check
// complete.
//
// By default it kills six short runs on the local backend, which make
// test runs: each of the three ways twice, at moments drawn anew each
// time from a seed taken from the clock. ZKCHAOS_DEATHS=N kills N runs
// on each backend that runs here (local, docker, external, and ssh on
// tests/ssh's rig: chaostest.NewSSHRig), ZKCHAOS_DEATH_BACKENDS narrows
// them (local,docker), and ZKCHAOS_DEATH_SEED replays a campaign or one
// death (each death's plan comes from its seed alone). The tables it
// logs are docs/measurements.md's "Death campaign".
package deaths
