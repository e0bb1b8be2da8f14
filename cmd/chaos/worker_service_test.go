package main

import (
	"strings"
	"testing"
)

// TestWorkerServers: a ZooKeeper worker takes --zk, another service's
// --servers with --service; each refuses the other's flag, and another
// service serves the lock workload only.
func TestWorkerServers(t *testing.T) {
	for _, tc := range []struct {
		service, zk, servers, workload string
		want                           string // "" for accepted; else part of the message
		recipe                         string
	}{
		{"zookeeper", "127.0.0.1:2181", "", "lock", "", "seed"},
		{"redis", "", "127.0.0.1:6379,127.0.0.1:6380", "lock", "", "redis-lock"},
		{"etcd", "", "127.0.0.1:2379", "lock", "", "etcd-mutex"},
		{"zookeeper", "127.0.0.1:2181", "127.0.0.1:6379", "lock", "--servers is for --service redis|etcd", ""},
		{"redis", "127.0.0.1:2181", "127.0.0.1:6379", "lock", "--zk is ZooKeeper's", ""},
		{"redis", "", "", "lock", "--servers: required", ""},
		{"etcd", "", "127.0.0.1:2379", "config", "serves the lock workload only", ""},
		{"memcached", "", "127.0.0.1:1", "lock", `unknown service "memcached"`, ""},
	} {
		addrs, names, msg := workerServers(tc.service, tc.zk, tc.servers, tc.workload)
		switch {
		case tc.want == "" && msg != "":
			t.Errorf("%+v refused: %s", tc, msg)
		case tc.want != "" && !strings.Contains(msg, tc.want):
			t.Errorf("%+v: %q, want %q", tc, msg, tc.want)
		case tc.want == "" && (len(addrs) == 0 || !contains(names, tc.recipe)):
			t.Errorf("%+v: addrs %v, recipes %v", tc, addrs, names)
		}
	}
}
