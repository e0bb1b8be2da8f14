package zoo

// The known-bug zoo (docs/zoo.md): each zoo recipe, run under the fault
// that exposes it, must be caught by the checker named for its bug, and
// the seed recipe under the same settings must not be. These are the
// harness's own calibration: about 45 s of ensemble per case.

import (
	"os"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

type zooCase struct {
	recipe  string
	checker string
	args    []string
	// name selects the row in ZKCHAOS_ZOO; the recipe's name when empty
	// (a lock zoo recipe run as a candidate needs another).
	name string
}

func (c zooCase) key() string {
	if c.name != "" {
		return c.name
	}
	return c.recipe
}

// election is the election zoo's common settings.
func election(args ...string) []string {
	return append([]string{"--workload", "election", "--fencing", "on", "--nemesis-interval", "2s"}, args...)
}

// zooCases is the table of docs/zoo.md.
var zooCases = []zooCase{
	{"herd", "herd", []string{"--nemesis", "none", "--keys", "1", "--fencing", "on"}, ""},
	{"assume-on-watch", "grant-overlap", []string{"--nemesis", "none", "--keys", "1", "--acquire-timeout", "300ms", "--fencing", "on"}, ""},
	{"get-not-exists", "liveness", []string{"--nemesis", "none", "--hold", "0", "--fencing", "on"}, ""},
	{"no-delete-on-timeout", "liveness", []string{"--nemesis", "none", "--keys", "1", "--acquire-timeout", "300ms", "--fencing", "on"}, ""},
	{"ignore-session", "grant-overlap", []string{"--nemesis", "pause-holder", "--session-timeout", "1s", "--pause", "2s", "--op-timeout", "5s", "--fencing", "on"}, ""},
	{"release-smallest", "grant-overlap", []string{"--nemesis", "pause-holder", "--session-timeout", "1s", "--pause", "2s", "--op-timeout", "5s", "--fencing", "on"}, ""},
	{"random-token", "token-order", []string{"--nemesis", "none", "--fencing", "on"}, ""},
	{"clock-token", "token-order", []string{"--nemesis", "none", "--fencing", "on"}, ""},
	// The config workload's zoo (docs/zoo.md, "The config workload's zoo").
	{"stale-apply", "config-consistent", []string{"--workload", "config", "--nemesis", "none"}, ""},
	{"no-rewatch", "config-convergence", []string{"--workload", "config", "--nemesis", "none"}, ""},
	{"blind-cas", "config-cas", []string{"--workload", "config", "--admins", "2", "--nemesis", "none"}, ""},
	// The election workload's zoo (docs/zoo.md, "The election workload's zoo").
	{"no-term", "term-order", election("--nemesis", "none"), ""},
	{"herd", "herd", election("--nemesis", "none"), "election-herd"},
	{"callback-done", "exactly-once", election("--nemesis", "expire-app-leader", "--hold", "1s"), ""},
	{"no-cancel", "demoted-work", election("--nemesis", "expire-app-leader", "--hold", "1s"), ""},
	{"ignore-session", "demoted-work", election("--nemesis", "expire-app-leader", "--hold", "1s"), "election-ignore-session"},
}

// TestZooIsCaught takes about 10 minutes (two runs per row), so it runs
// only when asked: ZKCHAOS_ZOO=all, or a list of rows. The same rows are
// cells of `chaos test-all` (matrix.Default), whose smoke subset CI runs
// on every change and whose --repeat measures detection rates.
func TestZooIsCaught(t *testing.T) {
	chaostest.NeedEnsemble(t)
	only := os.Getenv("ZKCHAOS_ZOO") // e.g. ZKCHAOS_ZOO=herd,clock-token
	if only == "" {
		t.Skip("the zoo table takes ~10 min: set ZKCHAOS_ZOO=all (or rows) to run it; CI runs its cells through chaos test-all --smoke")
	}
	if only == "all" {
		only = ""
	}
	for _, c := range zooCases {
		if only != "" && !strings.Contains(","+only+",", ","+c.key()+",") {
			continue
		}
		t.Run(c.key(), func(t *testing.T) {
			for _, recipe := range []string{c.recipe, "seed"} {
				args := append([]string{"--recipe", recipe, "--time-limit", "30s", "--seed", "7", "--name", recipe,
					"--gate", c.checker}, c.args...)
				r := chaostest.Run(t, t.TempDir(), args...)
				if r.Dir == "" {
					t.Fatalf("%s: no run folder\nstderr: %s", recipe, chaostest.Tail(r.Stderr, 3000))
				}
				res := chaostest.ReadResults(t, r.Dir)
				got := res.Checkers[c.checker].Valid
				switch {
				case recipe == c.recipe && (got != false || r.Code != 1):
					t.Errorf("%s: %s = %v (exit %d), want false (exit 1)", recipe, c.checker, got, r.Code)
				case recipe == "seed" && got == false:
					t.Errorf("seed under the settings of %s: %s = false, want it not flagged", c.recipe, c.checker)
				}
				chaostest.AssertNothingLeft(t, r.Dir)
			}
		})
	}
}
