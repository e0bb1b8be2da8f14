// Package scripts holds the tests of the repository's scripts.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runSet is what a default chaos run uses: Java, ZooKeeper's jars and
// the servers' logger, and the namespaces' tools.
var runSet = []string{"openjdk-17-jre-headless", "libzookeeper-java", "libslf4j-java", "iproute2", "iptables"}

// testOnly is what the test set adds: the other subjects, services,
// backends' tools and the browser tests' Chromium.
var testOnly = []string{"libcurator-recipes-java", "openjdk-17-jdk-headless", "python3-kazoo", "redis-server",
	"etcd-server", "mmdebstrap", "openssh-server", "sudo", "chromium", "fonts-dejavu-core", "postgresql-15"}

// dryRun runs install-deps.sh's dry mode for set on a machine made of
// path (PATH) and root (the files it checks), with env added, and returns
// the packages it would install and its exit code.
func dryRun(t *testing.T, set, path, root string, env ...string) ([]string, int) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	args := []string{"install-deps.sh"}
	if set != "" {
		args = append(args, set)
	}
	cmd := exec.Command(bash, args...)
	cmd.Env = append([]string{"PATH=" + path, "INSTALL_DEPS_DRY=1", "INSTALL_DEPS_ROOT=" + root}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 0 && stderr.Len() > 0 {
		t.Errorf("install-deps.sh %s: stderr %q", set, stderr.String())
	}
	return strings.Fields(string(out)), code
}

// TestNothingInstalled: on a machine with nothing (an empty PATH and an
// empty root), the run set is exactly what a default run uses, and the
// test set (also with no argument) is that and everything else.
func TestNothingInstalled(t *testing.T) {
	empty, root := t.TempDir(), t.TempDir()
	if got, code := dryRun(t, "run", empty, root); code != 0 || !slices.Equal(got, runSet) {
		t.Errorf("run set: exit %d, %v; want %v", code, got, runSet)
	}
	want := append(slices.Clone(runSet), testOnly...)
	for _, set := range []string{"test", ""} {
		if got, code := dryRun(t, set, empty, root); code != 0 || !slices.Equal(got, want) {
			t.Errorf("test set (%q): exit %d, %v; want %v", set, code, got, want)
		}
	}
	// A ZooKeeper tarball brings its own jars and logger.
	got, _ := dryRun(t, "run", empty, root, "ZOOKEEPER_HOME=/opt/zookeeper")
	if want := []string{"openjdk-17-jre-headless", "iproute2", "iptables"}; !slices.Equal(got, want) {
		t.Errorf("run set with ZOOKEEPER_HOME: %v, want %v", got, want)
	}
}

// TestEverythingInstalled: the same machine with every program and file
// the script checks installs nothing, in either set: each check sees
// what is there.
func TestEverythingInstalled(t *testing.T) {
	bin, root := t.TempDir(), t.TempDir()
	for _, p := range []string{"java", "javac", "ip", "iptables", "redis-server", "etcd", "mmdebstrap", "chromium"} {
		write(t, filepath.Join(bin, p), 0o755)
	}
	for _, f := range []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar",
		"/usr/share/java/curator-recipes.jar", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"} {
		write(t, filepath.Join(root, f), 0o644)
	}
	for _, f := range []string{"/usr/bin/python3", "/usr/sbin/sshd", "/usr/bin/sudo",
		"/usr/lib/postgresql/15/bin/postgres", "/usr/lib/postgresql/15/bin/initdb"} {
		write(t, filepath.Join(root, f), 0o755)
	}
	for _, set := range []string{"run", "test"} {
		if got, code := dryRun(t, set, bin, root); code != 0 || len(got) != 0 {
			t.Errorf("%s set with everything there: exit %d, would install %v", set, code, got)
		}
	}
}

// TestUnknownSet: a set the script does not know is refused, naming it.
func TestUnknownSet(t *testing.T) {
	if got, code := dryRun(t, "all", t.TempDir(), t.TempDir()); code != 2 || len(got) != 0 {
		t.Errorf("install-deps.sh all: exit %d, %v; want exit 2 and nothing", code, got)
	}
}

// TestMakeTargetsUseTheirSet: make run installs the run set only, make
// test (and bench) everything.
func TestMakeTargetsUseTheirSet(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	for target, want := range map[string]string{"run": "install-deps.sh run", "test": "install-deps.sh test", "bench": "install-deps.sh test"} {
		out, err := exec.Command(mk, "-n", "-C", "..", target).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		if n := strings.Count(string(out), "install-deps.sh"); n != 1 || !strings.Contains(string(out), want) {
			t.Errorf("make -n %s: want one %q:\n%s", target, want, out)
		}
	}
}

// write makes the file path with mode: a program that runs and exits 0
// (the script runs python3), or an empty file.
func write(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte{}
	if mode&0o111 != 0 {
		data = []byte("#!/bin/sh\nexit 0\n")
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}
