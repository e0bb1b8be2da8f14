package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/run/runner"
)

// scheduleFixes are the flags a followed schedule replaces: it names each
// fault, its offset and its hold.
var scheduleFixes = []string{"nemesis", "first-fault", "nemesis-interval", "pause"}

// followSchedule makes cfg follow the schedule in file (none: nothing to
// do). Its settings are those of the run the schedule belongs to
// (runner.SettingsOf) when there is one, with every flag given here over
// them (each recorded in cfg.Overrides, which the run logs), and the
// defaults and flags otherwise. Where the run's folder goes is always
// this command's (--results). Nothing is started: a schedule that does
// not read is refused naming its line.
func followSchedule(fs *pflag.FlagSet, cfg *runner.Config, file string) error {
	if file == "" {
		return nil
	}
	for _, f := range scheduleFixes {
		if fs.Changed(f) {
			return usageMistake{fmt.Sprintf("--%s cannot be given with --schedule: the schedule names each fault, its offset and its hold", f)}
		}
	}
	plan, err := nemesis.ReadPlan(file)
	if err != nil {
		return err
	}
	if base, ok := runner.SettingsOf(file); ok {
		stored, err := runner.LoadSettings(base)
		if err != nil {
			return err
		}
		stored.ResultsDir = cfg.ResultsDir
		stored.Overrides = overrideSettings(fs, &stored, *cfg, base)
		*cfg = stored
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", file, err)
	}
	cfg.Follow(plan, abs)
	return nil
}

// overrideSettings sets in stored every setting whose flag fs was given,
// to its value in parsed, and says what it replaced, a line each. The
// flags are the settings tables' (a flag that is no field of the
// configuration, such as --progress, is not a setting of the run).
func overrideSettings(fs *pflag.FlagSet, stored *runner.Config, parsed runner.Config, base string) []string {
	field := map[string]string{}
	for _, tb := range settingTables {
		if _, ok := tb.config.(runner.Config); ok {
			for name, flag := range tb.flags {
				field[flag] = name
			}
		}
	}
	var out []string
	to, from := reflect.ValueOf(stored).Elem(), reflect.ValueOf(parsed)
	fs.Visit(func(f *pflag.Flag) {
		name, ok := field["--"+f.Name]
		if !ok || name == "ResultsDir" || name == "Schedule" {
			return
		}
		was := to.FieldByName(name)
		out = append(out, fmt.Sprintf("--%s %s (%s: %s)", f.Name, settingText(from.FieldByName(name)), base, settingText(was)))
		was.Set(from.FieldByName(name))
	})
	slices.Sort(out)
	return out
}

// settingText is a setting's value as a flag takes it.
func settingText(v reflect.Value) string {
	if s, ok := v.Interface().([]string); ok {
		return strings.Join(s, ",")
	}
	return fmt.Sprint(v.Interface())
}
