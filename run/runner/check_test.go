package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/checker"
	"github.com/zkchaos/zkchaos/checker/fence"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/synth"
	"github.com/zkchaos/zkchaos/resource/register"
)

// TestCheckSyntheticRun: Check reads a synthetic run folder
// (internal/testkit/synth) as a real one: its test.json, status.json, history
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

// TestCheckRunKilledInSetup: a run whose controller died in its setup
// leaves a status but no history (nor test.json): Check judges it
// unknown, never valid, saying it stopped in setup; a folder with
// neither is not a run.
func TestCheckRunKilledInSetup(t *testing.T) {
	dir := t.TempDir()
	if err := store.WriteStatus(filepath.Join(dir, store.StatusFile), store.Status{Phase: store.PhaseSetup, TimeLimitNS: 4e9}); err != nil {
		t.Fatal(err)
	}
	out, err := Check(context.Background(), dir, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Results.Completion
	if out.Results.Valid != checker.Unknown || c == nil || c.Completed || !strings.Contains(c.Why, `phase "setup"`) {
		t.Errorf("verdict %v, completion %+v; want unknown, incomplete in setup", out.Results.Valid, c)
	}
	if _, err := Check(context.Background(), t.TempDir(), nil, 0); err == nil || !strings.Contains(err.Error(), "is not a run folder") {
		t.Errorf("an empty folder: %v, want not a run folder", err)
	}
}

// TestSyntheticConfigMatchesRunner: internal/testkit/synth cannot import runner
// (report's benchmarks use it, and runner imports report), so it writes
// test.json with a mirror of runner's field names. Every key it writes
// but its own "synthetic" mark must be one runner writes, or chaos check
// would read a synthetic run differently from a real one.
func TestSyntheticConfigMatchesRunner(t *testing.T) {
	r, err := synth.Generate(synth.Spec{Ops: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := r.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, store.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]any
	if err := json.Unmarshal(raw, &written); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(testFile{Config: Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	var real map[string]any
	if err := json.Unmarshal(b, &real); err != nil {
		t.Fatal(err)
	}
	for k := range written {
		if _, ok := real[k]; !ok && k != "synthetic" {
			t.Errorf("synth writes %q, which runner's test.json does not have", k)
		}
	}
}

// TestCheckGate: chaos check's --gate is checked against the run's own
// workload, from its test.json (the lock without one).
func TestCheckGate(t *testing.T) {
	dir := t.TempDir()
	if err := CheckGate(dir, []string{fence.NameDoubleWriter}); err != nil {
		t.Errorf("lock run without test.json, double-writer: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, store.TestFile), []byte(`{"workload": "config"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckGate(dir, []string{"config-monotonic"}); err != nil {
		t.Errorf("config run, config-monotonic: %v", err)
	}
	err := CheckGate(dir, []string{fence.NameDoubleWriter})
	if err == nil || !strings.Contains(err.Error(), `gate: the config workload: unknown gating checker "double-writer" (known: integrity, config-monotonic`) {
		t.Errorf("config run, double-writer: %v", err)
	}
	err = CheckGate(dir, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "gate is empty: give one or more of integrity, config-monotonic") {
		t.Errorf("config run, empty gate: %v", err)
	}
}
