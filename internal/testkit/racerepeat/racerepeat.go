// Package racerepeat says how many times a concurrency test repeats its
// race: ZKCHAOS_RACE_REPEAT when set, else the test's own small default,
// so that CI stays short while a developer can hunt rare interleavings
// with ZKCHAOS_RACE_REPEAT=200. One owner for the variable, whichever
// package's race it repeats (store, janitor, the real-run slot race).
package racerepeat

import (
	"os"
	"strconv"
	"testing"
)

// Env is the variable that overrides every race test's default.
const Env = "ZKCHAOS_RACE_REPEAT"

// Count is Env's value, or def when it is unset; a value that is not a
// positive integer fails the test rather than silently running once.
func Count(t testing.TB, def int) int {
	t.Helper()
	v := os.Getenv(Env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", Env, v)
	}
	return n
}
