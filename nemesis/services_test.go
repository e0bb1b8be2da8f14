package nemesis

import (
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/cluster"
)

// TestServiceFaults: "all" is the run's service's faults plus the client
// faults; another service's faults, and the ZooKeeper ones elsewhere, are
// refused saying which service they act on.
func TestServiceFaults(t *testing.T) {
	caps := func(svc string) Caps {
		return Caps{Cluster: cluster.Capabilities{Backend: "local"}, WorkerNet: true, Workload: "lock", Service: svc}
	}
	// example-pause-newest-holder is the fault of docs/extending.md
	// (example_extending_test.go): a client fault, usable on every service.
	for svc, want := range map[string][]string{
		cluster.Redis: {"example-pause-newest-holder", "isolate-holder", "kill-redis", "partition-redis", "pause-holder", "pause-redis", "pause-worker"},
		cluster.Etcd: {"example-pause-newest-holder", "expire-holder", "isolate-holder", "kill-etcd", "partition-etcd-leader", "pause-etcd", "pause-etcd-leader",
			"pause-holder", "pause-worker"},
	} {
		if got := Expand([]string{All}, caps(svc)); !slices.Equal(got, want) {
			t.Errorf("all on %s = %v, want %v", svc, got, want)
		}
	}
	zk := Expand([]string{All}, caps(""))
	for _, f := range zk {
		if strings.Contains(f, "redis") || strings.Contains(f, "etcd") {
			t.Errorf("all on ZooKeeper has %s", f)
		}
	}
	if !slices.Contains(zk, "pause-zk-leader") || !slices.Contains(zk, "rogue-client") {
		t.Errorf("all on ZooKeeper lacks its faults: %v", zk)
	}
	err := ValidateFor([]string{"pause-zk", "pause-etcd"}, caps(cluster.Redis))
	if err == nil || !strings.Contains(err.Error(), "pause-zk: it acts on zookeeper, and this run is service redis") ||
		!strings.Contains(err.Error(), "pause-etcd: it acts on etcd") {
		t.Errorf("zk and etcd faults on redis: %v", err)
	}
	if err := ValidateFor([]string{"expire-holder"}, caps(cluster.Redis)); err == nil {
		t.Error("expire-holder accepted on redis, which has no session to expire")
	}
	loop := caps(cluster.Redis)
	loop.Cluster.Lacks = map[cluster.Capability]string{cluster.CanPartition: "loopback"}
	if err := ValidateFor([]string{"partition-redis"}, loop); err == nil {
		t.Error("partition-redis accepted without per-server namespaces")
	}
}
