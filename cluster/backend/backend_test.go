package backend

import (
	"slices"
	"strings"
	"testing"
)

// TestBackends: every backend of --cluster is registered, in the order
// the help and the errors have always listed them, and found by name; an
// unknown one is refused with the known ones named.
func TestBackends(t *testing.T) {
	// example-loopback is the backend of docs/extending.md, registered by
	// this package's tests only (example_extending_test.go).
	want := []string{Local, Docker, External, SSH, ExampleLoopback}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		b, err := Lookup(n)
		if err != nil || b.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, b, err)
		}
	}
	_, err := Lookup("vm")
	if err == nil || err.Error() != `unknown backend "vm" (known: local, docker, external, ssh, example-loopback)` {
		t.Errorf("Lookup(vm): %v", err)
	}
	if err := Validate("vm", "netns"); err == nil || err.Error() != `unknown backend "vm" (known: local, docker, external, ssh, example-loopback)` {
		t.Errorf("Validate(vm): %v", err)
	}
	if err := Validate(Docker, "loopback"); err == nil || !strings.Contains(err.Error(), "docker needs net netns") {
		t.Errorf("Validate(docker, loopback): %v", err)
	}
}

// TestServices: the same for --service, and only the local backend runs
// a service other than ZooKeeper.
func TestServices(t *testing.T) {
	want := []string{ZooKeeper, Redis, Etcd}
	if got := Services(); !slices.Equal(got, want) {
		t.Fatalf("Services() = %v, want %v", got, want)
	}
	for _, n := range want {
		if s, err := LookupService(n); err != nil || s.Name() != n {
			t.Errorf("LookupService(%q) = %v, %v", n, s, err)
		}
	}
	if err := ValidateService("memcached", Local); err == nil || err.Error() != `unknown service "memcached" (known: zookeeper, redis, etcd)` {
		t.Errorf("ValidateService(memcached): %v", err)
	}
	for _, b := range Names() {
		err := ValidateService(Redis, b)
		if b == Local && err != nil {
			t.Errorf("redis on local: %v", err)
		}
		wantErr := "redis runs on the local backend only (the " + b + " backend's image is ZooKeeper's); use cluster local"
		if b != Local && (err == nil || err.Error() != wantErr) {
			t.Errorf("redis on %s: %v, want %q", b, err, wantErr)
		}
		if err := ValidateService(ZooKeeper, b); err != nil {
			t.Errorf("zookeeper on %s: %v", b, err)
		}
	}
}

// TestBackendFlags: a backend's own flags are checked by it and refused,
// naming their backend, by every other.
func TestBackendFlags(t *testing.T) {
	if err := CheckZK(Local, "h:2181"); err == nil || err.Error() != "zk h:2181: only with cluster external (the local backend makes its own ensemble)" {
		t.Errorf("CheckZK(local): %v", err)
	}
	if err := CheckZK(External, ""); err == nil || !strings.Contains(err.Error(), "cluster external needs zk") {
		t.Errorf("CheckZK(external, none): %v", err)
	}
	if err := CheckZK(External, "h:2181"); err != nil {
		t.Errorf("CheckZK(external): %v", err)
	}
	if err := CheckHosts(Docker, SSHFlags{Given: []string{"Hosts", "SSHUser"}}); err == nil || err.Error() != "hosts, ssh user: only with cluster ssh" {
		t.Errorf("CheckHosts(docker): %v", err)
	}
	if err := CheckHosts(SSH, SSHFlags{}); err == nil || !strings.Contains(err.Error(), "cluster ssh needs hosts") {
		t.Errorf("CheckHosts(ssh, none): %v", err)
	}
	if n := HostCount(SSH, "a,b,c"); n != 3 {
		t.Errorf("HostCount(ssh, a,b,c) = %d", n)
	}
	if n := HostCount(Local, "a,b,c"); n != 0 {
		t.Errorf("HostCount(local) = %d", n)
	}
	if err := CheckImage(Local, "zk:1"); err == nil || err.Error() != "image zk:1: only with cluster docker" {
		t.Errorf("CheckImage(local): %v", err)
	}
	if err := CheckImage(Docker, "zk:1"); err != nil {
		t.Errorf("CheckImage(docker): %v", err)
	}
	if RunRoot(Local, "r1") != "" || !strings.Contains(RunRoot(External, "r1"), "r1") {
		t.Errorf("RunRoot: local %q, external %q", RunRoot(Local, "r1"), RunRoot(External, "r1"))
	}
	if got := OnThisMachine(); !slices.Equal(got, []string{Local, Docker, ExampleLoopback}) {
		t.Errorf("OnThisMachine() = %v", got)
	}
	if got := Resumable(); !slices.Equal(got, []string{Local}) {
		t.Errorf("Resumable() = %v", got)
	}
	if got := PostgresHosts(); !slices.Equal(got, []string{Local}) {
		t.Errorf("PostgresHosts() = %v", got)
	}
}
