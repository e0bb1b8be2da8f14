package chaostest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/zkchaos/zkchaos/host/netns"
)

// NeedEnsemble skips a test that starts a real ZooKeeper ensemble when it
// cannot run here (-short, no java, no ZooKeeper jars: make test installs
// them), and otherwise holds a run token until the test ends, so that no
// more real runs go at once on the machine than it has tokens (Tokens).
func NeedEnsemble(t *testing.T) { NeedEnsembles(t, 1) }

// NeedEnsembles is NeedEnsemble for a test whose command starts n runs at
// once (a gate or test-all with --parallel n): it holds n tokens.
//
// The binaries are built (Binary) before the tokens are taken: the first
// test of a suite builds them, and a build under a token kept one of the
// machine's run slots idle for its seconds.
func NeedEnsembles(t *testing.T, n int) {
	t.Helper()
	skipWithoutEnsemble(t)
	Binary(t)
	holdRuns(t, n)
}

func skipWithoutEnsemble(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java on PATH: run scripts/install-deps.sh (make test does)")
	}
	if os.Getenv("ZOOKEEPER_HOME") == "" {
		if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
			t.Skip("no ZooKeeper jars: run scripts/install-deps.sh (make test does)")
		}
	}
}

// NeedNetns is NeedEnsemble for a test that needs network namespaces
// (partitions, a run's slot): it skips where they are not available (not
// root, no ip or iptables), as such a run would be refused.
func NeedNetns(t *testing.T) {
	t.Helper()
	NeedEnsemble(t)
	if err := netns.Available(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
}

// NeedRoot skips a test that needs root (network namespaces, iptables)
// when it runs as another user, as a loopback-only machine would.
func NeedRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
}
