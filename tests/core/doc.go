// Package core holds the integration tests of what every run promises,
// run against the real chaos binary, a real 3-node ensemble and real
// worker processes: a fenced run is valid and an unfenced one is caught
// (also on loopback, without root); bad input exits 255 with the problem
// on the first line and nothing started; a run that is interrupted,
// SIGKILLed in the middle of a fault, or whose results folder fills is
// never valid and leaves nothing behind (chaos cleanup, and the next run's
// start, remove what a run whose janitor died too left); and a run may
// start on the slot another run is still tearing down. The tests of each fault's own effect are in
// tests/clientfaults and tests/zkfaults.
//
// Integration tests live in packages under tests/, one job each, so that
// go test runs two of them at once and no package's timeout binds; what
// they share is internal/testkit/chaostest. docs/architecture.md ("Tests") has the
// layout and its measured times.
package core
