package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

func TestMain(m *testing.M) { chaostest.Main(m) }

// TestServicesWorkerName: the controller checks for the binary this one
// hands over to under the same name.
func TestServicesWorkerName(t *testing.T) {
	if servicesWorker != subjects.ServicesWorkerBinary {
		t.Errorf("chaos-worker hands over to %q, the controller checks for %q", servicesWorker, subjects.ServicesWorkerBinary)
	}
}

// TestHandsAnotherServiceOver: a worker of Redis is run by
// chaos-worker-services, whose recipes chaos-worker does not link: a
// mistake in its --recipe lists Redis's recipes, which only that binary
// knows. A ZooKeeper worker is not handed over. Without the other binary
// beside it, chaos-worker says so on its first line, exit 255.
func TestHandsAnotherServiceOver(t *testing.T) {
	worker := chaostest.Worker(t)
	redis := []string{"--service", "redis", "--servers", "127.0.0.1:1", "--register", "http://127.0.0.1:1", "--recipe", "nope"}
	code, stderr := start(worker, redis...)
	if code != 255 || !strings.Contains(stderr, `unknown --recipe "nope" for workload lock (known: redis-lock, redlock)`) {
		t.Errorf("redis: exit %d, stderr %q; want 255 and redis's recipes listed", code, stderr)
	}
	code, stderr = start(worker, "--zk", "127.0.0.1:1", "--register", "http://127.0.0.1:1", "--recipe", "redlock")
	if code != 255 || !strings.Contains(stderr, `unknown --recipe "redlock"`) {
		t.Errorf("zookeeper with redlock: exit %d, stderr %q; want 255 and the recipe refused", code, stderr)
	}
	alone := filepath.Join(t.TempDir(), "chaos-worker")
	b, err := os.ReadFile(worker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	code, stderr = start(alone, redis...)
	first, _, _ := strings.Cut(stderr, "\n")
	want := "chaos-worker: --service redis runs in " + filepath.Join(filepath.Dir(alone), servicesWorker) + ", which did not start"
	if code != 255 || !strings.HasPrefix(first, want) {
		t.Errorf("alone: exit %d, first line %q; want 255 and %q", code, first, want)
	}
}

// start runs prog with args and no input, and returns its exit code and
// stderr.
func start(prog string, args ...string) (int, string) {
	cmd := exec.Command(prog, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	return chaostest.ExitOf(cmd.Run()), stderr.String()
}
