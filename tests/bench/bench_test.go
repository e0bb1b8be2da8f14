package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/run/bench"
)

// TestQuickBench runs `chaos bench --quick` as CI does: every figure
// (raw pairs and each default subject, lock and whole section, hot and on
// 8 keys) is above zero, the overhead was measured, every target has a
// verdict in bench.json and in the output, and the bench left nothing.
func TestQuickBench(t *testing.T) {
	chaostest.NeedEnsemble(t)
	bin := chaostest.Binary(t)
	results := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "bench", "--quick", "--results", results)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chaos bench --quick: %v\n%s\n%s", err, stdout.String(), chaostest.Tail(stderr.String(), 30))
	}
	_, dir, ok := strings.Cut(stdout.String(), "bench folder: ")
	dir, _, _ = strings.Cut(dir, " ")
	if !ok || !strings.HasPrefix(dir, filepath.Join(results, "bench")+"/") {
		t.Fatalf("output names no bench folder under %s:\n%s", results, stdout.String())
	}
	res := chaostest.ReadJSON[bench.Result](t, dir, bench.File)
	defer chaostest.AssertRunLeftNothing(t, res.RunID, chaostest.RunSlot(dir))

	want := 2 + len(bench.DefaultSubjects)*4 // raw hot and 8 keys; per subject lock and section, hot and 8 keys
	if len(res.Figures) != want {
		t.Errorf("%d figures, want %d: %+v", len(res.Figures), want, res.Figures)
	}
	for _, f := range res.Figures {
		if f.PerSec <= 0 || f.Ops <= 0 || f.Includes == "" {
			t.Errorf("figure %s: %v/s, %d ops, includes %q: want every figure measured", f.Name(), f.PerSec, f.Ops, f.Includes)
		}
	}
	if o := res.Overhead; o == nil || o.DirectNS <= 0 || o.WorkerNS <= 0 || o.Samples == 0 {
		t.Errorf("overhead not measured: %+v", o)
	}
	if len(res.Targets) != 3 {
		t.Fatalf("targets %+v, want 3", res.Targets)
	}
	for _, tg := range res.Targets {
		if !tg.Known {
			t.Errorf("target %q has no verdict", tg.Name)
		}
		if !strings.Contains(stdout.String(), tg.Name) {
			t.Errorf("output does not show target %q:\n%s", tg.Name, stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "MET") {
		t.Errorf("output shows no verdict:\n%s", stdout.String())
	}
}

// TestBadFlag: the first line names the problem, exit 255, and nothing
// was started (no bench folder).
func TestBadFlag(t *testing.T) {
	bin := chaostest.Binary(t)
	results := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "bench", "--subjects", "seed,nope", "--results", results)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := chaostest.ExitOf(err); code != 255 {
		t.Fatalf("exit %d, want 255", code)
	}
	if first, _, _ := strings.Cut(stderr.String(), "\n"); !strings.Contains(first, `unknown subject "nope"`) {
		t.Errorf("first line %q does not name the problem", first)
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("a bad flag left %v in the results folder", entries)
	}
}
