// Package workloads holds the integration tests of the workloads beside
// the lock (`chaos run --workload ...`): bad input refused before anything
// starts, a correct client valid under a fault with its checkers' figures
// in results.json, and a zoo bug caught by the checker that names it.
package workloads
