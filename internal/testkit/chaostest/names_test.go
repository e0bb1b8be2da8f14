package chaostest

import (
	"path/filepath"
	"testing"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/run/matrix"
)

// TestNamesMatchTheirSources: what this package names itself, to keep
// the subjects' clients out of the test binaries that use it, is what
// client/subjects and run/matrix say.
func TestNamesMatchTheirSources(t *testing.T) {
	if want := []string{"chaos", subjects.WorkerBinary, subjects.ServicesWorkerBinary}; len(binaries) != 3 ||
		binaries[0] != want[0] || binaries[1] != want[1] || binaries[2] != want[2] {
		t.Errorf("binaries %q; want %q", binaries, want)
	}
	exe := filepath.Join(t.TempDir(), "chaos")
	if got, want := filepath.Join(filepath.Dir(exe), binaries[1]), subjects.WorkerPath(exe); got != want {
		t.Errorf("Worker's path %s; subjects.WorkerPath says %s", got, want)
	}
	if UntilViolationLimit != matrix.DefaultLimit {
		t.Errorf("UntilViolationLimit %s; matrix.DefaultLimit is %s", UntilViolationLimit, matrix.DefaultLimit)
	}
}
