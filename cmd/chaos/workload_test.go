package main

import (
	"io"
	"slices"
	"testing"
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
