package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/run/runner"
)

// TestSettingFlags: every field the runner may name is named by a flag
// chaos run or chaos soak has, so a refusal points at something the user
// can type.
func TestSettingFlags(t *testing.T) {
	run, soak := newRunCmd(t.Context()).Flags(), newSoakCmd(t.Context()).Flags()
	cfg := reflect.TypeOf(runner.Config{})
	for field, flag := range settingFlags {
		if _, ok := cfg.FieldByName(field); !ok && field != "Resume" {
			t.Errorf("%s: no such field of runner.Config", field)
		}
		if name := strings.TrimPrefix(flag, "--"); run.Lookup(name) == nil && soak.Lookup(name) == nil {
			t.Errorf("%s: flag %s is not among chaos run's and chaos soak's", field, flag)
		}
		if got := runner.Setting(field); got != flag {
			t.Errorf("runner.Setting(%q) = %q, want %q", field, got, flag)
		}
	}
	if err := (runner.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "--workers 0: must be 1..200") {
		t.Errorf("a refusal does not name the flag: %v", err)
	}
}
