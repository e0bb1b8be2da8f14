package chaostest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/zkchaos/zkchaos/host/netns"
)

// NeedEnsemble skips a test that starts a real ZooKeeper ensemble when it
// cannot run here (-short, no java, no ZooKeeper jars: make test installs
// them), and otherwise holds the machine lock shared until the test ends,
// so that a test that needs the machine alone (NeedMachineAlone) waits for
// it instead of racing it.
func NeedEnsemble(t *testing.T) {
	t.Helper()
	skipWithoutEnsemble(t)
	holdMachine(t, shared)
}

// NeedMachineAlone is NeedEnsemble for a test whose outcome depends on
// what other runs on the machine do (which network slot is the lowest
// free one, say): it holds the machine lock exclusively until it ends,
// after the ensemble tests of other packages that hold it now, and before
// any that ask after it.
func NeedMachineAlone(t *testing.T) {
	t.Helper()
	skipWithoutEnsemble(t)
	holdMachine(t, exclusive)
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
