package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/nemesis"
	"github.com/zkchaos/zkchaos/workloads"
)

// external is a valid run against an external ensemble.
func external() Config {
	c := Defaults()
	c.Cluster, c.ZK = "external", "127.0.0.1:2181,127.0.0.1:2182"
	return c
}

func TestExternalValidation(t *testing.T) {
	if err := external().Validate(); err != nil {
		t.Fatalf("external with pause-holder: %v", err)
	}
	cases := []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.ZK = "" }, "cluster external needs zk host:port"},
		{func(c *Config) { c.ZK = "zk1:2181,zk2" }, `zk: "zk2": not host:port`},
		{func(c *Config) { c.Cluster = "local" }, "zk 127.0.0.1:2181,127.0.0.1:2182: only with cluster external"},
		{func(c *Config) { c.Nemesis = []string{"pause-holder", "partition-zk-halves"} },
			"partition-zk-halves: the external backend cannot cut traffic between servers"},
		{func(c *Config) { c.Nemesis = []string{"kill-zk"} }, "kill-zk: the external backend cannot kill and restart a server"},
		{func(c *Config) { c.Nemesis = []string{"pause-zk-majority"} }, "pause-zk-majority: the external backend cannot pause a server"},
		{func(c *Config) { c.Workload, c.Nemesis, c.Admins = workloads.ConfigName, []string{"pause-worker"}, 1 },
			"workload config: not with cluster external"},
	}
	for _, tc := range cases {
		c := external()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
	}
}

// TestExternalAllIsClientFaults: --nemesis all against an external
// ensemble is the faults that need no server verb.
func TestExternalAllIsClientFaults(t *testing.T) {
	caps := external().Caps()
	caps.WorkerNet = true
	var usable []string
	for _, n := range nemesis.Names() {
		if n != nemesis.All && n != "none" && nemesis.Usable(n, caps) == nil {
			usable = append(usable, n)
		}
	}
	for _, want := range []string{"pause-holder", "pause-worker", "expire-holder", "isolate-holder"} {
		if !slices.Contains(usable, want) {
			t.Errorf("%s not usable against an external ensemble (usable: %v)", want, usable)
		}
	}
	for _, n := range usable {
		if strings.Contains(n, "-zk") {
			t.Errorf("server fault %s usable against an external ensemble", n)
		}
	}
}

func TestSplitRunRoot(t *testing.T) {
	c := external()
	c.RunRoot = "/zkchaos/ab12cd34"
	wl, err := c.NewWorkload()
	if err != nil {
		t.Fatal(err)
	}
	open, rest := splitRunRoot(wl.Nodes(), c.RunRoot)
	paths := func(ns []workloads.Node) (out []string) {
		for _, n := range ns {
			out = append(out, n.Path)
		}
		return out
	}
	if got := strings.Join(paths(open), " "); got != "/zkchaos /zkchaos/ab12cd34" {
		t.Errorf("open nodes %s", got)
	}
	if got := strings.Join(paths(rest), " "); got != "/zkchaos/ab12cd34/locks /zkchaos/ab12cd34/locks/inventory /zkchaos/ab12cd34/locks/inventory/SKU-1 /zkchaos/ab12cd34/locks/inventory/SKU-2 /zkchaos/ab12cd34/locks/inventory/SKU-3" {
		t.Errorf("protected nodes %s", got)
	}
	if open, rest := splitRunRoot(wl.Nodes(), ""); len(open) != 0 || len(rest) != len(wl.Nodes()) {
		t.Errorf("without a run root: open %v", open)
	}
}
