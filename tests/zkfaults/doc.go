// Package zkfaults holds the integration tests of the ZooKeeper faults
// (pauses, kills, partitions of the servers) on the real ensemble, and of
// what a controller killed in the middle of one leaves for its janitor and
// for chaos cleanup. See tests/core for why integration tests are split
// into packages.
package zkfaults
