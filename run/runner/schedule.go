package runner

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/nemesis"
)

// A run that follows a schedule (chaos run --schedule FILE) injects the
// file's entries instead of drawing faults from its seed; the rest of
// its settings come from the run the schedule belongs to (SettingsOf),
// with the flags given beside it over them.

// Follow makes c a run that follows the schedule p read from file: its
// faults are p's (none for an empty schedule), for validation and the
// record.
func (c *Config) Follow(p *nemesis.Plan, file string) {
	c.Schedule, c.ScheduleFile = p, file
	c.Nemesis = p.Faults()
}

// SettingsOf finds the test.json a schedule file belongs to: in the
// file's folder (a run's own schedule.json), else in the folder above (a
// schedule kept in a folder of its run's, as a shrink's); false when
// neither has one.
func SettingsOf(file string) (string, bool) {
	dir := filepath.Dir(file)
	for _, d := range []string{dir, filepath.Dir(dir)} {
		p := filepath.Join(d, store.TestFile)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// LoadSettings reads the configuration of a stored run from its
// test.json, to run it again: what made that run one of its own (its
// subtree on an external ensemble, the schedule it followed, the
// overrides it was given) is left out.
func LoadSettings(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("settings: %w", err)
	}
	var tf testFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return Config{}, fmt.Errorf("settings %s: %w", path, err)
	}
	c := tf.Config
	c.RunRoot, c.Schedule, c.ScheduleFile, c.Overrides = "", nil, "", nil
	return c, nil
}

// validateSchedule checks a followed schedule's part of c: every fault
// of it usable here (when that is known, capsKnown), and a time limit
// that holds its last entry's injection and hold.
func validateSchedule(c Config, capsKnown bool) []error {
	var errs []error
	if c.TimeLimit <= 0 {
		return []error{setting.Errorf("TimeLimit", c.TimeLimit.String(), "must be positive")}
	}
	if capsKnown {
		if err := nemesis.ValidateFor(c.Schedule.Faults(), c.Caps()); err != nil {
			errs = append(errs, setting.Err("Schedule", c.ScheduleFile, err))
		}
	}
	last, ok := c.Schedule.Last()
	if !ok {
		if c.StopAfterSchedule {
			errs = append(errs, setting.Refused("StopAfterSchedule", "%s with the empty schedule %s would end the workload at its first operation", setting.Name("StopAfterSchedule"), c.ScheduleFile))
		}
		if c.TimeLimit < MinTimeLimit {
			errs = append(errs, setting.Errorf("TimeLimit", c.TimeLimit.String(), "too short; the minimum is %s", MinTimeLimit))
		}
		return errs
	}
	need := time.Duration(last.Offset) + InjectAllowance + time.Duration(last.Hold)
	if c.TimeLimit < need {
		errs = append(errs, setting.Refused("TimeLimit", "%s %s cannot hold the schedule %s: its last entry (%s) starts at %s and holds %s; the minimum is %s",
			setting.Name("TimeLimit"), c.TimeLimit, c.ScheduleFile, last.Fault, time.Duration(last.Offset), time.Duration(last.Hold), need))
	}
	return errs
}

// logSchedule logs where a run that follows a schedule got its settings:
// the schedule, and each setting given beside it over its run's.
func logSchedule(log *slog.Logger, c Config) {
	if c.Schedule == nil {
		return
	}
	log.Info("following a schedule", "file", c.ScheduleFile, "entries", len(c.Schedule.Entries))
	for _, o := range c.Overrides {
		log.Info("setting overridden", "override", o)
	}
}
