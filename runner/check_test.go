package runner

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/internal/synth"
	"github.com/zkchaos/zkchaos/register"
)

// TestCheckSyntheticRun: Check reads a synthetic run folder
// (internal/synth) as a real one: its test.json, status.json, history
// and apply log. Unfenced, the paused holders' late writes are double
// writes; fenced, the gate passes. This keeps synth's files in the
// format Check reads, which the report's benchmarks rely on.
func TestCheckSyntheticRun(t *testing.T) {
	for _, mode := range []string{register.ModeOff, register.ModeOn} {
		r, err := synth.Generate(synth.Spec{Ops: 1500, Fencing: mode, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := r.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		out, err := Check(context.Background(), dir, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dw := out.Results.Checkers[fence.NameDoubleWriter]
		want := map[string]checker.Validity{register.ModeOff: checker.Invalid, register.ModeOn: checker.Valid}[mode]
		if out.Results.Valid != want || dw.Valid != want || out.Results.Completion == nil || !out.Results.Completion.Completed {
			t.Errorf("fencing %s: verdict %v, double-writer %v (%s), completion %+v", mode, out.Results.Valid, dw.Valid, dw.Error, out.Results.Completion)
		}
		page, err := os.ReadFile(out.Report)
		if err != nil || !strings.Contains(string(page), "synthetic") {
			t.Errorf("fencing %s: report %s: %v (want the synthetic name on it)", mode, out.Report, err)
		}
	}
}
