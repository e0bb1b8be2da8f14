// Package workloads holds the integration tests of the workloads beside
// the lock (`chaos run --workload config|election`): bad input refused
// before anything starts, a worker of another workload stopping the run,
// correct clients valid under a fault with their checkers' figures, a
// config zoo bug caught, and the election's fenced and unfenced verdicts.
package workloads
