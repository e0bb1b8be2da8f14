package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWorkloadDefaults: a run that names only its workload gets that
// workload's fault, gate and folder name; flags given win.
func TestWorkloadDefaults(t *testing.T) {
	cases := []struct {
		args          []string
		nemesis, gate []string
		name          string
	}{
		{nil, []string{"pause-holder"}, []string{"double-writer", "register", "wrong-token"}, "lock"},
		{[]string{"--workload", "config"}, []string{"pause-worker"},
			[]string{"config-consistent", "config-monotonic", "config-convergence", "config-cas"}, "config"},
		{[]string{"--workload", "election"}, []string{"pause-app-leader"}, []string{"exactly-once", "stale-term"}, "election"},
		{[]string{"--workload", "election", "--nemesis", "lost-reply", "--gate", "leader-overlap", "--name", "x"},
			[]string{"lost-reply"}, []string{"leader-overlap"}, "x"},
	}
	for _, tc := range cases {
		cfg, err := parseRunFlags(append(tc.args, "--results", t.TempDir()), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !slices.Equal(cfg.Nemesis, tc.nemesis) || !slices.Equal(cfg.Gate, tc.gate) || cfg.Name != tc.name {
			t.Errorf("%v: nemesis %v, gate %v, name %q; want %v, %v, %q", tc.args, cfg.Nemesis, cfg.Gate, cfg.Name, tc.nemesis, tc.gate, tc.name)
		}
	}
}

// TestWorkloadTiming: the config and election workloads keep the session
// timeout and first fault they were calibrated with unless given; the lock
// keeps the run's fast defaults; a flag given wins, also for soak.
func TestWorkloadTiming(t *testing.T) {
	cases := []struct {
		args        []string
		session, ff time.Duration
	}{
		{nil, time.Second, 0},
		{[]string{"--workload", "config"}, 3 * time.Second, 2 * time.Second},
		{[]string{"--workload", "election"}, 3 * time.Second, 2 * time.Second},
		{[]string{"--workload", "config", "--session-timeout", "1s"}, time.Second, 2 * time.Second},
		{[]string{"--workload", "election", "--first-fault", "0s"}, 3 * time.Second, 0},
	}
	for _, tc := range cases {
		cfg, err := parseRunFlags(append(tc.args, "--results", t.TempDir()), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if cfg.SessionTimeout != tc.session || cfg.FirstFault != tc.ff {
			t.Errorf("%v: session %v, first fault %v; want %v, %v", tc.args, cfg.SessionTimeout, cfg.FirstFault, tc.session, tc.ff)
		}
	}
}

// TestCuratorSelectorIsAnElectionSubject: curator-selector (Curator's
// LeaderSelector) is accepted for the election and refused for the lock
// workload with an error that says so, before anything starts (exit 255).
func TestCuratorSelectorIsAnElectionSubject(t *testing.T) {
	if _, err := parseRunFlags([]string{"--workload", "election", "--recipe", "curator-selector", "--results", t.TempDir()}, io.Discard); err != nil {
		t.Fatalf("election with curator-selector: %v", err)
	}
	for _, args := range [][]string{{"--recipe", "curator-selector"}, {"--workload", "lock", "--recipe", "curator-selector"},
		{"--workload", "config", "--recipe", "curator-selector"}} {
		_, err := parseRunFlags(append(args, "--results", t.TempDir()), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "serves only the election workload") {
			t.Errorf("%v: error %v, want one saying curator-selector serves only the election workload", args, err)
		}
	}
	if code := cmdRun(context.Background(), context.Background(), []string{"--recipe", "curator-selector", "--results", t.TempDir()}); code != exitHarness {
		t.Errorf("chaos run --recipe curator-selector (lock): exit %d, want %d", code, exitHarness)
	}
}

// TestStopAtFirstFlag: off by default; on for a gate with a checker
// that finds violations while the run lasts (the election's default
// gate: stale-term online, exactly-once on the run so far; config:
// config-monotonic); refused for a gate without one (the election's herd
// and election-stats, measures of the whole run), before anything
// starts (exit 255).
func TestStopAtFirstFlag(t *testing.T) {
	if cfg, err := parseRunFlags([]string{"--results", t.TempDir()}, io.Discard); err != nil || cfg.StopAtFirst {
		t.Fatalf("default: stop at first %v, err %v; want false, nil", cfg.StopAtFirst, err)
	}
	if cfg, err := parseRunFlags([]string{"--stop-at-first", "--results", t.TempDir()}, io.Discard); err != nil || !cfg.StopAtFirst {
		t.Fatalf("--stop-at-first: %v, err %v; want true, nil", cfg.StopAtFirst, err)
	}
	election := []string{"--workload", "election", "--stop-at-first", "--results", t.TempDir()}
	if cfg, err := parseRunFlags(election, io.Discard); err != nil || !cfg.StopAtFirst {
		t.Errorf("%v: %v, err %v; want accepted (stale-term is online)", election, cfg.StopAtFirst, err)
	}
	args := []string{"--workload", "election", "--gate", "herd,election-stats", "--stop-at-first", "--results", t.TempDir()}
	if _, err := parseRunFlags(args, io.Discard); err == nil || !strings.Contains(err.Error(), "--stop-at-first: no checker of the gate (herd,election-stats) can find a violation while the run lasts") {
		t.Errorf("%v: error %v, want one saying no checker of the gate can stop the run", args, err)
	}
	if code := cmdRun(context.Background(), context.Background(), args); code != exitHarness {
		t.Errorf("chaos run %v: exit %d, want %d", args, code, exitHarness)
	}
	config := []string{"--workload", "config", "--stop-at-first", "--results", t.TempDir()}
	if cfg, err := parseRunFlags(config, io.Discard); err != nil || !cfg.StopAtFirst {
		t.Errorf("%v: %v, err %v; want accepted (config-monotonic is online)", config, cfg.StopAtFirst, err)
	}
}
