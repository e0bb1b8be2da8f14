package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/setting"
)

// TestFaultCycleNames: the fault cycle's message names each setting as
// the command does, and in words what the command does not name.
func TestFaultCycleNames(t *testing.T) {
	setting.Register(func(field string) string {
		if field == "SessionTimeout" {
			return "--session-timeout"
		}
		return ""
	})
	t.Cleanup(func() { setting.Register(nil) })
	c := Defaults()
	c.SessionTimeout, c.TimeLimit = 10*time.Minute, 20*time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "(twice --session-timeout 10m0s)); raise time limit or shorten --session-timeout (or set pause)") {
		t.Errorf("the fault cycle's message does not name the settings as the command does: %v", err)
	}
}

// TestValidateFieldErrors: each refusal says which field is at fault,
// whatever the message, for a command that points at its flag.
func TestValidateFieldErrors(t *testing.T) {
	cases := []struct {
		mut   func(*Config)
		field string
	}{
		{func(c *Config) { c.Workers = 0 }, "Workers"},
		{func(c *Config) { c.Name = "../up" }, "Name"},
		{func(c *Config) { c.SessionTimeout = time.Millisecond }, "SessionTimeout"},
		{func(c *Config) { c.Net = "wifi" }, "Net"},
		{func(c *Config) { c.Cluster = "vm" }, "Cluster"},
		{func(c *Config) { c.Nemesis = []string{"explode"} }, "Nemesis"},
		{func(c *Config) { c.TimeLimit = time.Nanosecond }, "TimeLimit"},
		{func(c *Config) { c.MonitorInterval = time.Millisecond }, "MonitorInterval"},
		{func(c *Config) { c.Gate = []string{"nonsense"} }, "Gate"},
		{func(c *Config) { c.Resource = "sqlite" }, "Resource"},
		{func(c *Config) { c.Hold = -time.Second }, "Hold"},
	}
	for _, tc := range cases {
		c := Defaults()
		tc.mut(&c)
		var fe setting.FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("want a FieldError of %s, got %#v (%v)", tc.field, fe, err)
		}
	}
}

// TestUnknownWorkloadFirst: an unknown workload is the first thing said,
// before what it makes the other parts refuse (its subject, its gate).
func TestUnknownWorkloadFirst(t *testing.T) {
	c := Defaults()
	c.Workload = "election-9"
	err := c.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), `workload: unknown workload "election-9"`) {
		t.Errorf("first line: %v", err)
	}
}
