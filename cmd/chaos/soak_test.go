package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestSoakFlags: chaos soak is chaos run's parser with a soak's defaults,
// and refuses what contradicts itself or serves beyond loopback.
func TestSoakFlags(t *testing.T) {
	res := t.TempDir()
	cfg, _, sf, err := parseSoakArgs([]string{"--results", res}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TimeLimit != time.Hour || !cfg.StopAtFirst || !cfg.Soak || cfg.Name != "soak-lock" ||
		cfg.ResourcesInterval != 10*time.Second || cfg.SummaryInterval != time.Minute || sf.metricsAddr != "" {
		t.Errorf("defaults: %+v %+v", cfg, sf)
	}
	cfg, _, sf, err = parseSoakArgs([]string{"--results", res, "--duration", "8h", "--keep-going", "--fencing", "off",
		"--metrics-addr", "127.0.0.1:9187", "--summary-interval", "30s"}, io.Discard)
	if err != nil || cfg.TimeLimit != 8*time.Hour || cfg.StopAtFirst || cfg.Fencing != "off" || sf.metricsAddr != "127.0.0.1:9187" || cfg.SummaryInterval != 30*time.Second {
		t.Errorf("8h keep-going: %v %+v", err, cfg)
	}
	// A gate with a checker that finds violations while the run lasts
	// (config's, the election's stale-term) stops at its first one; a
	// gate without one (the election's herd, a measure of the whole run)
	// keeps going unless told to stop, and is refused when told.
	if cfg, _, _, err := parseSoakArgs([]string{"--results", res, "--workload", "config", "--recipe", "seed"}, io.Discard); err != nil || !cfg.StopAtFirst {
		t.Errorf("config workload: %v, stop at first %v", err, cfg.StopAtFirst)
	}
	if cfg, _, _, err := parseSoakArgs([]string{"--results", res, "--workload", "election", "--recipe", "seed"}, io.Discard); err != nil || !cfg.StopAtFirst {
		t.Errorf("election workload: %v, stop at first %v", err, cfg.StopAtFirst)
	}
	if cfg, _, _, err := parseSoakArgs([]string{"--results", res, "--workload", "election", "--recipe", "seed", "--gate", "herd"}, io.Discard); err != nil || cfg.StopAtFirst {
		t.Errorf("election workload gated on herd: %v, stop at first %v", err, cfg.StopAtFirst)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration", "1h", "--time-limit", "2h"}, "--duration and --time-limit"},
		{[]string{"--keep-going", "--stop-at-first"}, "contradict"},
		{[]string{"--metrics-addr", "0.0.0.0:9187"}, "only a loopback address"},
		{[]string{"--metrics-addr", "localhost:9187"}, "only a loopback address"},
		{[]string{"--resources-interval", "1ms"}, "--resources-interval"},
		{[]string{"--workload", "election", "--recipe", "seed", "--gate", "herd", "--stop-at-first"}, "--stop-at-first"},
	} {
		_, _, _, err := parseSoakArgs(append([]string{"--results", res}, bad.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: err %v, want one naming %q", bad.args, err, bad.want)
		}
	}
}

// TestSoakResumeFlags: with --resume only the extra time and the output
// flags are taken; a setting is refused, naming the flag, and the extra
// time must be given.
func TestSoakResumeFlags(t *testing.T) {
	_, _, sf, err := parseSoakArgs([]string{"--resume", "/r/soak-lock/1", "--duration", "10s", "--progress", "off"}, io.Discard)
	if err != nil || sf.resume != "/r/soak-lock/1" {
		t.Fatalf("--resume with --duration and --progress: err %v, resume %q", err, sf.resume)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", "d"}, "--resume needs --duration"},
		{[]string{"--resume", "d", "--duration", "1m", "--workers", "3"}, "--workers cannot be given with --resume"},
		{[]string{"--resume", "d", "--duration", "1m", "--keep-going"}, "--keep-going cannot be given with --resume"},
		{[]string{"--resume", "d", "--duration", "1m", "--results", "/tmp"}, "--results cannot be given"},
	} {
		if _, _, _, err := parseSoakArgs(bad.args, io.Discard); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: err %v, want one naming %q", bad.args, err, bad.want)
		}
	}
}
