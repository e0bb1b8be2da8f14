package runview

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
)

// Config is the part of test.json the listing and the compare page show
// in their own columns (runner writes the file; TestConfigMatchesRunner
// keeps the names in step), with the whole file as a map for everything
// else.
type Config struct {
	Name      string        `json:"name"`
	Recipe    string        `json:"recipe"`
	Workload  string        `json:"workload"`
	Nemesis   []string      `json:"nemesis"`
	Fencing   string        `json:"fencing"`
	TimeLimit time.Duration `json:"time_limit"`
	Seed      int64         `json:"seed"`
	Start     time.Time     `json:"start"`
	StartWall int64         `json:"start_wall_ns"`
	// All is every key of test.json, for the compare page's list of
	// differences; nil when the run has no test.json.
	All map[string]any `json:"-"`
}

// decodeConfig reads test.json; a run without one has an empty Config.
func decodeConfig(raw []byte) (Config, error) {
	var c Config
	if raw == nil {
		return c, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("%s: %w", store.TestFile, err)
	}
	if err := json.Unmarshal(raw, &c.All); err != nil {
		return c, fmt.Errorf("%s: %w", store.TestFile, err)
	}
	return c, nil
}

// NemesisString is the fault list as the command line takes it.
func (c Config) NemesisString() string { return strings.Join(c.Nemesis, ",") }

// Value is one setting of test.json as a person reads it: strings bare,
// durations (stored in nanoseconds) as durations, anything else as JSON.
// ok is false when the run has no such key.
func (c Config) Value(key string) (s string, ok bool) {
	v, ok := c.All[key]
	if !ok {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		if DurationKey(key) {
			return time.Duration(int64(x)).String(), true
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v), true
	}
	return string(b), true
}

// DurationKey says a test.json key holds a time.Duration (nanoseconds):
// runner names none of its other numbers this way (TestConfigMatchesRunner
// checks every field). The report's configuration table reads it too.
func DurationKey(key string) bool {
	for _, s := range []string{"time_limit", "timeout", "interval", "pause_for", "hold", "think", "tick_time", "recovery", "budget"} {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}
