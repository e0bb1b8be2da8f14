// Package zkfaults holds the integration tests of the ZooKeeper faults
// (pauses, kills, partitions of the servers) on the real ensemble: each
// takes effect verifiably, is undone with the ensemble whole again, and
// leaves a fenced run valid. What a controller killed in the middle of one
// leaves is tested in tests/core; tests/core also says why integration
// tests are split into packages.
package zkfaults
