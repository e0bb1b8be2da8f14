package worker

import (
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/client/recipes"
)

// TestEveryWorkloadHasASubject: each workload the built-in recipes serve
// has a builder here, so `chaos-worker --workload W` never lists recipes
// it cannot run; and an unknown workload is refused by name.
func TestEveryWorkloadHasASubject(t *testing.T) {
	ws := recipes.Workloads()
	if len(ws) < 3 {
		t.Fatalf("recipes serve %v; want lock, election and config at least", ws)
	}
	for _, name := range ws {
		if subjectBuilders[name] == nil {
			t.Errorf("workload %q has recipes but no subject builder", name)
		}
	}
	if len(subjectBuilders) != len(ws) {
		t.Errorf("subject builders for %d workloads, recipes for %d (%v)", len(subjectBuilders), len(ws), ws)
	}
	w := &worker{cfg: Config{Workload: "no-such-workload"}}
	if err := w.newSubject(recipes.Config{}); err == nil || !strings.Contains(err.Error(), `"no-such-workload"`) {
		t.Errorf("unknown workload: %v", err)
	}
}
