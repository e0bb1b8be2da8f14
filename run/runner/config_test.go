package runner

import (
	"slices"
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
		{func(c *Config) { c.Workers = 0 }, "workers 0: must be 1..200"},
		{func(c *Config) { c.Keys = -1 }, "keys -1"},
		{func(c *Config) { c.TimeLimit = 0 }, "time limit 0s: must be positive"},
		{func(c *Config) { c.SessionTimeout = 100 * time.Millisecond }, "session timeout 100ms: must be at least two ticks"},
		{func(c *Config) { c.Fencing = "sometimes" }, `fencing "sometimes"`},
		{func(c *Config) { c.Nemesis = []string{"explode"} }, "explode"},
		{func(c *Config) { c.Nemesis = []string{"none", "pause-holder"} }, "none"},
		{func(c *Config) { c.Token = "uuid" }, `token "uuid"`},
		{func(c *Config) { c.Net = "wifi" }, `net "wifi"`},
		{func(c *Config) { c.Name = "../up" }, "name: test name"},
		{func(c *Config) { c.LockRoot = "locks/" }, `lock root "locks/"`},
		{func(c *Config) { c.Nodes = 0 }, "nodes 0"},
		{func(c *Config) { c.Gate = nil }, "gate is empty"},
		{func(c *Config) { c.Gate = []string{"nonsense"} }, "nonsense"},
		{func(c *Config) { c.SessionTimeout, c.TimeLimit = 10*time.Minute, 20*time.Second },
			"time limit 20s is shorter than one fault cycle: the minimum is 20m1s (first fault 0s + 1s to inject + pause 20m0s (twice session timeout 10m0s)); raise time limit or shorten session timeout (or set pause)"},
		{func(c *Config) { c.PauseFor, c.TimeLimit = 30*time.Second, 20*time.Second },
			"time limit 20s is shorter than one fault cycle: the minimum is 31s (first fault 0s + 1s to inject + pause 30s); raise time limit or shorten pause"},
		{func(c *Config) { c.TimeLimit = time.Nanosecond },
			"time limit 1ns is shorter than one fault cycle: the minimum is 3s (first fault 0s + 1s to inject + pause 2s (twice session timeout 1s))"},
		{func(c *Config) { c.Nemesis, c.TimeLimit = []string{"none"}, time.Nanosecond }, "time limit 1ns: too short; the minimum is 1s"},
		{func(c *Config) { c.ResultsDir = "/proc/forbidden" }, "results /proc/forbidden: cannot create a folder in /proc"},
		{func(c *Config) { c.ACL = "maybe" }, `acl "maybe"`},
		{func(c *Config) { c.MonitorInterval = 10 * time.Millisecond }, "monitor interval 10ms: must be 0 (no monitor) or at least 100ms"},
		{func(c *Config) { c.MonitorInterval = -time.Second }, "monitor interval -1s"},
		{func(c *Config) { c.FirstFault = -time.Second }, "first fault -1s: must not be negative"},
		{func(c *Config) { c.ResourcesInterval = 100 * time.Millisecond }, "resources interval 100ms: must be 0 (none) or at least 500ms"},
		{func(c *Config) { c.SummaryInterval = -time.Second }, "summary interval -1s"},
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

// TestTimeLimitFitsOneFaultCycle: the limit is exactly one cycle, or the
// floor without faults; one nanosecond less is refused.
func TestTimeLimitFitsOneFaultCycle(t *testing.T) {
	c := Defaults()
	c.TimeLimit = c.FaultCycle()
	if err := c.Validate(); err != nil {
		t.Errorf("a time limit of exactly one fault cycle (%s): %v", c.TimeLimit, err)
	}
	c.TimeLimit--
	if err := c.Validate(); err == nil {
		t.Errorf("a time limit 1ns short of one fault cycle (%s) accepted", c.FaultCycle())
	}
	c = Defaults()
	c.Nemesis, c.TimeLimit, c.SessionTimeout = []string{"none"}, MinTimeLimit, time.Hour
	if err := c.Validate(); err != nil {
		t.Errorf("no faults, %s, session timeout 1h: %v", c.TimeLimit, err)
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

// TestStopCheckers: --stop-at-first stops only at a checker that gates
// the verdict and runs online or judges the run so far (liveness); a
// measure of the whole run (herd) cannot stop it.
func TestStopCheckers(t *testing.T) {
	c := Defaults()
	if got := c.StopCheckers(); !slices.Contains(got, "double-writer") || slices.Contains(got, "token-order") || slices.Contains(got, "register") {
		t.Errorf("default gate %v: stop checkers %v, want the gate's online ones only (double-writer, wrong-token)", c.Gate, got)
	}
	c.Gate = []string{"token-order", "herd", "liveness"}
	if got := c.StopCheckers(); !slices.Equal(got, []string{"liveness", "token-order"}) {
		t.Errorf("gate %v: stop checkers %v, want [liveness token-order] (in the workload's order)", c.Gate, got)
	}
	c.Gate, c.StopAtFirst = []string{"herd", "register"}, true
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "stopping at the first violation: no checker of the gate (herd,register) can find a violation while the run lasts") {
		t.Errorf("gate without a checker that can stop the run: %v", err)
	}
}

// TestServiceValidation: another service runs the lock workload on the
// local backend with its own subjects and faults; everything else is
// refused by name, before anything starts.
func TestServiceValidation(t *testing.T) {
	redis := func(c *Config) { c.Service, c.Recipe = "redis", DefaultRecipe("redis", c.Recipe) }
	ok := Defaults()
	redis(&ok)
	ok.Nemesis = []string{"pause-holder", "pause-redis", "kill-redis"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("redis run refused: %v", err)
	}
	if ok.Recipe != "redis-lock" || DefaultRecipe("etcd", "seed") != "etcd-mutex" || DefaultRecipe("", "seed") != "seed" {
		t.Errorf("default recipes: redis %q", ok.Recipe)
	}
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Service = "memcached" }, `service: unknown service "memcached"`},
		{func(c *Config) { redis(c); c.Workload = "config" }, "service redis: only the lock workload runs on it (this run is workload config)"},
		{func(c *Config) { redis(c); c.Cluster, c.Net = "docker", "netns" }, "redis runs on the local backend only"},
		{func(c *Config) { redis(c); c.Nemesis = []string{"kill-zk"} }, "kill-zk: it acts on zookeeper, and this run is service redis"},
		{func(c *Config) { redis(c); c.Recipe = "seed" }, `subject "seed" does not run on redis`},
		{func(c *Config) { c.Recipe = "redlock" }, `"redlock" is a recipe of service redis`},
	} {
		c := Defaults()
		tc.mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

// TestValidateResource: --resource is register or postgres, and postgres
// is refused where it cannot run, each with its reason, before anything
// starts (the binaries' directory is overridden, as a machine without
// postgresql-15 would be).
func TestValidateResource(t *testing.T) {
	c := Defaults()
	c.Resource = "sqlite"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `resource "sqlite": must be register or postgres`) {
		t.Errorf("unknown resource: %v", err)
	}
	c.Resource = ""
	if err := c.Validate(); err != nil {
		t.Errorf("no resource (a run from before the flag) is the register: %v", err)
	}
	t.Setenv("ZKCHAOS_PG_BIN", t.TempDir())
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(*Config) {}, "PostgreSQL server binary"},
		{func(c *Config) { c.Recipe = "curator" }, `subject "curator" is not a built-in recipe`},
		{func(c *Config) { c.Workload, c.Recipe, c.Gate = "config", "seed", nil }, "only the lock workload (not config)"},
		{func(c *Config) { c.Net = "loopback" }, "needs the run's network namespaces"},
		{func(c *Config) { c.Service, c.Recipe = "redis", "redis-lock" }, "only with service zookeeper"},
	}
	for _, tc := range cases {
		c := Defaults()
		c.Resource = ResourcePostgres
		tc.mut(&c)
		if c.Gate == nil {
			c.Gate = c.DefaultGate()
		}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "resource postgres: "+tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
}
