package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/run/runner"
)

// scheduleRun writes a stored run's test.json (unfenced, 2 workers, seed
// 42, 30 s) and a schedule.json of two pause-holder entries into a
// folder of dir, and returns the schedule's path.
func scheduleRun(t *testing.T, dir string) string {
	t.Helper()
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := runner.Defaults()
	cfg.Workers, cfg.Fencing, cfg.Seed, cfg.TimeLimit, cfg.RunRoot = 2, "off", 42, 30*time.Second, "/zkchaos/old"
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, store.TestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return writeSchedule(t, filepath.Join(run, store.ScheduleFile),
		`{"offset":"1s","fault":"pause-holder","hold":"2s","outcome":"ok","target":"process 1 (pid 9)"}`,
		`{"offset":"6s","fault":"pause-holder","hold":"2s","outcome":"fail","error":"no target"}`)
}

func writeSchedule(t *testing.T, path string, lines ...string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestScheduleTakesItsRunsSettings: --schedule FILE runs with the
// settings of the run FILE belongs to, each flag given beside it over
// them and recorded as an override; where its folder goes is this
// command's; the faults are the schedule's.
func TestScheduleTakesItsRunsSettings(t *testing.T) {
	dir := t.TempDir()
	sched := scheduleRun(t, dir)
	results := filepath.Join(dir, "replays")
	cfg, err := parseRunFlags([]string{"--schedule", sched, "--time-limit", "20s", "--keys", "1", "--results", results}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 2 || cfg.Fencing != "off" || cfg.Seed != 42 || cfg.TimeLimit != 20*time.Second || cfg.Keys != 1 ||
		cfg.ResultsDir != results || cfg.RunRoot != "" {
		t.Errorf("workers %d fencing %s seed %d time limit %s keys %d results %s run root %q; want the stored 2, off, 42, the flags' 20s and 1, %s, none",
			cfg.Workers, cfg.Fencing, cfg.Seed, cfg.TimeLimit, cfg.Keys, cfg.ResultsDir, cfg.RunRoot, results)
	}
	base := filepath.Join(dir, "run", store.TestFile)
	want := []string{"--keys 1 (" + base + ": 3)", "--time-limit 20s (" + base + ": 30s)"}
	if !slices.Equal(cfg.Overrides, want) {
		t.Errorf("overrides %q, want %q", cfg.Overrides, want)
	}
	if cfg.Schedule == nil || len(cfg.Schedule.Entries) != 2 || !slices.Equal(cfg.Nemesis, []string{"pause-holder"}) || !filepath.IsAbs(cfg.ScheduleFile) {
		t.Errorf("schedule %+v from %s, nemesis %v; want its 2 entries, pause-holder, an absolute path", cfg.Schedule, cfg.ScheduleFile, cfg.Nemesis)
	}

	// A schedule kept in a folder of its run's takes the run's settings;
	// one kept nowhere near a run, the defaults.
	if err := os.MkdirAll(filepath.Join(dir, "run", "shrink"), 0o755); err != nil {
		t.Fatal(err)
	}
	kept := writeSchedule(t, filepath.Join(dir, "run", "shrink", "try.json"), `{"offset":"1s","fault":"kill-zk","hold":"1s"}`)
	if cfg, err := parseRunFlags([]string{"--schedule", kept, "--results", results}, io.Discard); err != nil || cfg.Seed != 42 || cfg.Overrides != nil {
		t.Errorf("a schedule in a folder of its run: seed %d, overrides %q, err %v; want 42, none", cfg.Seed, cfg.Overrides, err)
	}
	alone := writeSchedule(t, filepath.Join(t.TempDir(), "s.json"))
	cfg, err = parseRunFlags([]string{"--schedule", alone, "--results", results}, io.Discard)
	if err != nil || cfg.Workers != runner.Defaults().Workers || !slices.Equal(cfg.Nemesis, []string{"none"}) || len(cfg.Schedule.Entries) != 0 {
		t.Errorf("an empty schedule alone: workers %d nemesis %v, err %v; want the defaults and no fault", cfg.Workers, cfg.Nemesis, err)
	}
}

// TestScheduleRefusals: what a schedule cannot be given with, and a
// schedule the run cannot hold, are refused before anything starts.
func TestScheduleRefusals(t *testing.T) {
	sched := scheduleRun(t, t.TempDir())
	results := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nemesis", "kill-zk"}, "--nemesis cannot be given with --schedule"},
		{[]string{"--pause", "1s"}, "--pause cannot be given with --schedule"},
		{[]string{"--time-limit", "8s"}, "--time-limit 8s cannot hold the schedule " + sched + ": its last entry (pause-holder) starts at 6s and holds 2s; the minimum is 9s"},
		{[]string{"--workload", "config"}, "--gate"}, // the stored lock gate is not the config workload's
	} {
		_, err := parseRunFlags(append([]string{"--schedule", sched, "--results", results}, tc.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
	bad := writeSchedule(t, filepath.Join(t.TempDir(), "bad.json"), `{"offset":"1s","fault":"pause-holder","hold":"2s"}`, `{"offset":"0s","fault":"pause-holder","hold":"2s"}`)
	if _, err := parseRunFlags([]string{"--schedule", bad, "--results", results}, io.Discard); err == nil ||
		!strings.HasPrefix(err.Error(), "schedule "+bad+" line 2: offsets out of order") {
		t.Errorf("out of order: %v", err)
	}
	// --stop-after-schedule: with no schedule, or one with no entry,
	// there is no last entry to stop after.
	if _, err := parseRunFlags([]string{"--stop-after-schedule", "--results", results}, io.Discard); err == nil ||
		!strings.HasPrefix(err.Error(), "--stop-after-schedule needs --schedule") {
		t.Errorf("--stop-after-schedule alone: %v", err)
	}
	empty := writeSchedule(t, filepath.Join(t.TempDir(), "empty.json"))
	if _, err := parseRunFlags([]string{"--schedule", empty, "--stop-after-schedule", "--results", results}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--stop-after-schedule with the empty schedule "+empty+" would end the workload at its first operation") {
		t.Errorf("--stop-after-schedule with an empty schedule: %v", err)
	}
	if cfg, err := parseRunFlags([]string{"--schedule", sched, "--stop-after-schedule", "--results", results}, io.Discard); err != nil || !cfg.StopAfterSchedule {
		t.Errorf("--stop-after-schedule with a schedule: %v, set %v", err, cfg.StopAfterSchedule)
	}
}
