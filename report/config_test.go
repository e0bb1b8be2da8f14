package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestConfigDurations: the configuration table shows test.json's
// durations (nanoseconds) as Go durations with the raw number beside,
// and leaves every other value, numbers that are not durations
// included, as it is.
func TestConfigDurations(t *testing.T) {
	rows, raw := config(Page{Config: []byte(`{"time_limit": 5389035601497, "session_timeout": 3000000000,
		"nemesis_interval": 1500000000, "check_budget": 0, "hold": 350000000, "workers": 6,
		"start_wall_ns": 1767323045000000000, "worker_log_head": 1048576, "fencing": "off", "nemesis": ["pause-holder"]}`)})
	if raw != "" {
		t.Fatalf("test.json shown raw: %q", raw)
	}
	want := map[string]kv{
		"time_limit":       {"time_limit", "1h29m49.035601497s", "5389035601497 ns"},
		"session_timeout":  {"session_timeout", "3s", "3000000000 ns"},
		"nemesis_interval": {"nemesis_interval", "1.5s", "1500000000 ns"},
		"check_budget":     {"check_budget", "0s", "0 ns"},
		"hold":             {"hold", "350ms", "350000000 ns"},
		"workers":          {"workers", "6", ""},
		"start_wall_ns":    {"start_wall_ns", "1767323045000000000", ""},
		"worker_log_head":  {"worker_log_head", "1048576", ""},
		"fencing":          {"fencing", "off", ""},
		"nemesis":          {"nemesis", `["pause-holder"]`, ""},
	}
	for _, r := range rows {
		if w, ok := want[r.Key]; !ok || r != w {
			t.Errorf("row %+v, want %+v", r, w)
		}
		delete(want, r.Key)
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, build(Page{Config: []byte(`{"session_timeout": 3000000000}`)})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<code>3s</code> <span class="raw" title="as test.json has it">(3000000000 ns)</span>`) {
		t.Error("the page does not show session_timeout as 3s with its raw value")
	}
}
