package subjects

import (
	"slices"
	"strings"
	"testing"
)

// TestServiceSubjects: a service's built-in recipes run on it only, the
// ZooKeeper recipes and Curator on ZooKeeper only, exec: on any; the
// worker of another service gets --service and --servers, never --zk.
func TestServiceSubjects(t *testing.T) {
	for _, tc := range []struct {
		service, spec, err string
	}{
		{"redis", "redis-lock", ""},
		{"redis", "redlock", ""},
		{"etcd", "etcd-mutex", ""},
		{"etcd", "exec:/bin/true", ""},
		{"", "seed", ""},
		{"redis", "seed", `subject "seed" does not run on redis`},
		{"etcd", "redis-lock", `subject "redis-lock" does not run on etcd`},
		{"redis", "curator", `subject "curator" does not run on redis`},
		{"", "etcd-mutex", "is a recipe of service etcd"},
		{"zookeeper", "redlock", "is a recipe of service redis"},
		{"memcached", "seed", `unknown service "memcached"`},
	} {
		err := ValidateService("", tc.service, tc.spec)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s on %q: %v", tc.spec, tc.service, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s on %q: %v, want %q", tc.spec, tc.service, err, tc.err)
		}
	}
	exe := binFolder(t, true)
	_, args, err := Command(exe, "redis-lock", Flags{ZK: "10.0.0.2:6379", Register: "http://r", Service: "redis"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(args, " ")
	if slices.Contains(args, "--zk") || !strings.Contains(joined, "--service redis --servers 10.0.0.2:6379") {
		t.Errorf("redis worker args %v", args)
	}
	_, args, _ = Command(exe, "seed", Flags{ZK: "10.0.0.2:2181", Register: "http://r"})
	if slices.Contains(args, "--service") || !slices.Contains(args, "--zk") {
		t.Errorf("ZooKeeper worker args changed: %v", args)
	}
}
