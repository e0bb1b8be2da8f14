// Package core holds the integration tests of the harness's contract,
// run against the real chaos binary, a real 3-node ensemble and real
// worker processes: a fenced run is valid, an unfenced run is caught (also
// on loopback, without root), an interrupted or SIGKILLed run is never
// valid and leaves nothing behind, and bad input exits 255 with the
// problem on the first line and nothing started.
//
// Integration tests live in packages under tests/, one job each, so that
// go test runs two of them at once and no package's timeout binds; what
// they share is internal/chaostest. The package has no code of its own.
package core
