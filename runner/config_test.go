package runner

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultsAreValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestValidateNamesTheBadValue(t *testing.T) {
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Workers = 0 }, "--workers"},
		{func(c *Config) { c.Keys = -1 }, "--keys"},
		{func(c *Config) { c.TimeLimit = 0 }, "--time-limit"},
		{func(c *Config) { c.SessionTimeout = 100 * time.Millisecond }, "--session-timeout"},
		{func(c *Config) { c.Fencing = "sometimes" }, "--fencing"},
		{func(c *Config) { c.Nemesis = []string{"explode"} }, "explode"},
		{func(c *Config) { c.Nemesis = []string{"none", "pause-holder"} }, "none"},
		{func(c *Config) { c.Token = "uuid" }, "--token"},
		{func(c *Config) { c.Net = "wifi" }, "--net"},
		{func(c *Config) { c.Name = "../up" }, "--name"},
		{func(c *Config) { c.LockRoot = "locks/" }, "--lock-root"},
		{func(c *Config) { c.Nodes = 0 }, "--nodes"},
		{func(c *Config) { c.ACL = "maybe" }, "--acl"},
	}
	for _, tc := range cases {
		c := Defaults()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %q, got %v", tc.want, err)
		}
	}
}

func TestPauseDefaultsToTwiceTheSessionTimeout(t *testing.T) {
	c := Defaults()
	c.SessionTimeout = 4 * time.Second
	if got := c.Pause(); got != 8*time.Second {
		t.Errorf("Pause() = %s, want 8s", got)
	}
	c.PauseFor = time.Second
	if got := c.Pause(); got != time.Second {
		t.Errorf("Pause() = %s, want 1s", got)
	}
}
