package gateworkloads

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// python is Debian's interpreter, which has kazoo (python3-kazoo); -B
// keeps it from writing bytecode beside the scripts.
const python = "/usr/bin/python3"

// gateTime is the --time-limit of the cells that run their time: the
// fenced ones, which must stay valid (the config's pause-worker cell
// sees one fault cycle of the calibrated timing: first fault at 2 s, a 6
// s pause). The unfenced election cell ignores it: like every cell that
// expects only violations it stops at its first stale-term violation, up
// to the gate's --violation-limit (matrix.DefaultLimit), since whether
// one pause makes a stale write land is a race in the paused worker and
// a fixed 12 s, then 20 s, once saw none on a loaded CI machine.
const gateTime = "12s"

// script is the exec: recipe of a Python worker at path (relative to this
// package) with args.
func script(t *testing.T, path string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatal(err)
	}
	return "exec:" + strings.Join(append([]string{python, "-B", abs}, args...), " ")
}

// needKazoo skips where Debian's kazoo is missing: the subjects are
// written with it.
func needKazoo(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		t.Skipf("%s cannot import kazoo (python3-kazoo): %v", python, err)
	}
}

// gate runs `chaos gate --quick` for workload against recipe, with the
// extra flags, and returns its exit code, its output and the JUnit cases
// that failed.
func gate(t *testing.T, workload, recipe string, extra ...string) (int, string, []string) {
	t.Helper()
	chaostest.NeedEnsemble(t)
	needKazoo(t)
	exe := chaostest.Binary(t)
	dir := t.TempDir()
	junit := filepath.Join(dir, "gate.xml")
	// --parallel 1: one run token, used all the time. With two cells at
	// once the second token would sit idle through the baseline and
	// whichever cell ends first; tests/gate's TestCIJobPasses runs
	// docs/ci.md's job, two cells at once.
	args := append([]string{"gate", "--workload", workload, "--quick", "--parallel", "1", "--recipe", recipe,
		"--time-limit", gateTime, "--junit", junit, "--results", filepath.Join(dir, "results"), "--progress", "off"}, extra...)
	cmd := exec.CommandContext(t.Context(), exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := chaostest.ExitOf(cmd.Run())
	all, failed := chaostest.JUnitCases(t, junit)
	if len(all) != 2 {
		t.Errorf("JUnit cases %v, want the quick set's 2:\n%s", all, chaostest.Tail(out.String(), 3000))
	}
	return code, out.String(), failed
}

// passes gates a correct subject: exit 0, no cell failed; it returns
// the gate's output. extra are more gate flags.
func passes(t *testing.T, workload, recipe string, extra ...string) string {
	t.Helper()
	code, out, failed := gate(t, workload, recipe, extra...)
	if code != 0 || len(failed) != 0 {
		t.Fatalf("gate of a correct %s client exited %d (failed %v), want 0:\n%s", workload, code, failed, chaostest.Tail(out, 3000))
	}
	return out
}

// caught gates a buggy subject: exit 1, and cell named as wrong in the
// summary and failed in the JUnit file. Only that cell is judged here,
// the first of the quick set, so the gate runs --fail-fast: the other
// cell is left out, skipped, and would only cost its seconds (its
// violation may never show: a candidate whose term is always 0 never
// sends a stale one). The subject runs (its bug is in what it does), so
// the gate's baseline is left out too.
func caught(t *testing.T, workload, recipe, cell string) {
	t.Helper()
	code, out, failed := gate(t, workload, recipe, "--fail-fast", "--baseline", "0")
	if code != 1 {
		t.Fatalf("gate of a buggy %s client exited %d, want 1:\n%s", workload, code, chaostest.Tail(out, 3000))
	}
	if !strings.Contains(out, "  "+cell+": wrong") {
		t.Errorf("the summary does not name the failing cell %s:\n%s", cell, chaostest.Tail(out, 2000))
	}
	if !slices.Contains(failed, cell) {
		t.Errorf("JUnit failures %v, want %s among them", failed, cell)
	}
	if !strings.Contains(out, ": skipped: not run: --fail-fast, "+cell+" was judged wrong") {
		t.Errorf("the summary does not show the other cell left out by --fail-fast:\n%s", chaostest.Tail(out, 2000))
	}
}

// electionWorker is the repository's third-party election worker, written
// from docs/worker-protocol.md alone: a correct candidate.
const electionWorker = "../../client/subjects/conformance/testdata/election_worker.py"

// TestElectionGatePasses: a correct candidate is valid without faults,
// and unfenced its paused leader's stale-term call is caught. The gate's
// baseline runs first and must let it through: the election has the
// most kinds of operation, each of which must complete (the worker
// names no protocol version, which is logged, not refused).
//
// It can take over 60 s: the baseline and the quick set's two cells run
// one after another on one run token, each with its own ensemble, and
// the unfenced cell runs until its first stale-term violation (the end
// of the first or a later 6 s pause of the leader).
func TestElectionGatePasses(t *testing.T) {
	chaostest.LongRun(t)
	t.Parallel()
	out := passes(t, "election", script(t, electionWorker))
	_, line, _ := strings.Cut(out, "baseline (")
	line, _, _ = strings.Cut(line, "\n")
	if !strings.Contains(line, "the subject ran: campaign: ") {
		t.Errorf("no baseline before the cells:\n%s", chaostest.Tail(out, 2000))
	}
	t.Log("baseline (" + line) // what the baseline costs
}

// TestElectionGateCatchesZeroTerm: the same candidate presenting term 0
// fails the baseline on term-order.
func TestElectionGateCatchesZeroTerm(t *testing.T) {
	t.Parallel()
	caught(t, "election", script(t, "testdata/election_zero_term.py"), "election:subject/none/fencing-on")
}

// TestConfigGatePasses: a correct config client, two admins, is valid
// without faults and with a client paused past its session. The
// baseline is TestElectionGatePasses's to show: here it would only cost
// its seconds.
func TestConfigGatePasses(t *testing.T) {
	chaostest.LongRun(t)
	t.Parallel()
	passes(t, "config", script(t, "testdata/config_worker.py"), "--baseline", "0")
}

// TestConfigGateCatchesStaleApply: a client that applies a notified
// version with the data read when its watch was set fails the baseline
// on config-consistent.
func TestConfigGateCatchesStaleApply(t *testing.T) {
	t.Parallel()
	caught(t, "config", script(t, "testdata/config_worker.py", "--bug", "stale-apply"), "config:subject/none/fencing-on")
}

// TestGateWorkloadBadInput: an unknown workload is bad input, reported on
// the first line with the known ones, exit 255, nothing started.
func TestGateWorkloadBadInput(t *testing.T) {
	exe := chaostest.Binary(t)
	dir := t.TempDir()
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--workload", "elect", "--recipe", "seed"}, []string{`unknown workload "elect"`, "config, election, lock"}},
		{[]string{"--workload", "election", "--matrix", filepath.Join(dir, "m.json"), "--recipe", "seed"}, []string{"--workload", "--matrix"}},
	}
	for _, tc := range cases {
		cmd := exec.CommandContext(t.Context(), exe, append([]string{"gate", "--results", filepath.Join(dir, "results")}, tc.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code := chaostest.ExitOf(cmd.Run())
		first, _, _ := strings.Cut(stderr.String(), "\n")
		for _, w := range tc.want {
			if code != 255 || !strings.Contains(first, w) {
				t.Errorf("gate %v: exit %d, first line %q; want 255 and %q", tc.args, code, first, w)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "results")); err == nil {
		t.Error("bad input started a run: results/ exists")
	}
}
