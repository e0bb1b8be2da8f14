package gate

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/run/matrix"
)

// ciMarker is the info string of docs/ci.md's block of commands.
const ciMarker = "```sh ci-gate"

// ciBlock is the shell block of docs/ci.md marked for this test.
func ciBlock(t *testing.T, repo string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	in, found := false, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == ciMarker:
			in, found = true, true
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in:
			block = append(block, line)
		}
	}
	if !found || in || len(block) == 0 {
		t.Fatalf("docs/ci.md has no closed %s block", ciMarker)
	}
	return strings.Join(block, "\n") + "\n"
}

// TestCIJobPasses runs docs/ci.md's commands, exactly, from a team's
// folder, with the built-in worker (chaos-worker --recipe seed) as the
// team's client: a correct lock, so the gate must pass and leave its JUnit
// file and run folders under results/.
//
// It is slow because it runs a CI job's commands, not a shortcut: make
// deps-run and make build, then the quick gate's two cells at once, the
// fenced one for GATE_TIME (12 s here, as tests/gateworkloads' gates;
// 30 s in docs/ci.md) and the
// unfenced one until its first double write (up to matrix.DefaultLimit),
// each with its own ensemble. Anything shorter would test commands other
// than the ones docs/ci.md tells a team to copy.
func TestCIJobPasses(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsembles(t, 2) // the job's gate runs --parallel 2
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	team := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", ciBlock(t, repo))
	cmd.Dir = team
	cmd.Env = append(os.Environ(), "ZKCHAOS="+repo, "LOCK_CLIENT="+chaostest.Worker(t)+" --recipe seed", "GATE_TIME=12s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if code := chaostest.ExitOf(cmd.Run()); code != 0 {
		t.Fatalf("the CI job exited %d, want 0:\n%s", code, chaostest.Tail(out.String(), 3000))
	}
	if line := baselineLine(out.String()); !strings.Contains(line, "the subject ran: acquire: ") {
		t.Errorf("no baseline before the cells, or a baseline that says otherwise: %q", line)
	} else {
		t.Log(line) // what the baseline costs a CI job
	}
	all, failed := chaostest.JUnitCases(t, filepath.Join(team, "results", "gate.xml"))
	if len(all) != 2 || len(failed) != 0 {
		t.Errorf("JUnit: cases %v, failed %v; want the quick set's 2, none failed", all, failed)
	}
	if idx, _ := filepath.Glob(filepath.Join(team, "results", "gate", "*", "index.html")); len(idx) != 1 {
		t.Errorf("results/gate/<timestamp>/index.html: found %v", idx)
	}
}

// TestGateCatchesBrokenClient gates a zoo recipe that hands out the lock
// on any fired watch (assume-on-watch), through a --matrix file of one
// cell under contention: the gate must exit 1 and name that cell.
func TestGateCatchesBrokenClient(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	exe := chaostest.Binary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "cells.json")
	cells := `[{"nemesis": ["none"], "args": ["--keys", "1", "--acquire-timeout", "300ms"],
  "expect": {"grant-overlap": "valid", "liveness": "valid"}, "why": "one holder at a time under contention"}]`
	if err := os.WriteFile(file, []byte(cells), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "gate.xml")
	// No baseline: the subject runs, and its cell is what is judged. 10
	// s: with one key every release fires a waiter's watch, and each such
	// waiter takes the lock while another may hold it, a chance to
	// overlap many times a second.
	cmd := exec.CommandContext(t.Context(), exe, "gate", "--recipe", "exec:"+chaostest.Worker(t)+" --recipe assume-on-watch",
		"--matrix", file, "--time-limit", "10s", "--junit", junit, "--results", filepath.Join(dir, "results"), "--progress", "off",
		"--baseline", "0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if code := chaostest.ExitOf(cmd.Run()); code != 1 {
		t.Fatalf("gate of a broken client exited %d, want 1:\n%s", code, chaostest.Tail(out.String(), 3000))
	}
	const cell = "subject/none/fencing-on"
	if !strings.Contains(out.String(), "  "+cell+": wrong") {
		t.Errorf("the summary does not name the failing cell %s:\n%s", cell, chaostest.Tail(out.String(), 2000))
	}
	if _, failed := chaostest.JUnitCases(t, junit); len(failed) != 1 || failed[0] != cell {
		t.Errorf("JUnit failures %v, want [%s]", failed, cell)
	}
	replayNamed(t, out.String(), cell, junit)
}

// replayNamed checks that the failing cell's summary line ends with the
// command that replays its run (and, when the run was invalid, the one
// that shrinks it), that the folder it names is that run's (it exists,
// with its history), and that the JUnit failure says the same.
func replayNamed(t *testing.T, out, cell, junit string) {
	t.Helper()
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  "+cell+": ") {
			line = l
		}
	}
	_, runDir, ok := strings.Cut(line, " replay ")
	runDir, shrunk, shrinks := strings.Cut(runDir, "; shrink: ")
	if shrinks && !strings.HasSuffix(shrunk, " shrink "+runDir) {
		t.Errorf("the summary line of %s shrinks another run: %q", cell, line)
	}
	if !ok || !filepath.IsAbs(runDir) {
		t.Fatalf("the summary line of %s names no replay of an absolute run folder: %q", cell, line)
	}
	if _, err := os.Stat(filepath.Join(runDir, "history.jsonl")); err != nil {
		t.Errorf("the replayed folder is no run: %v", err)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "replay "+runDir+`" type="wrong"`) && !strings.Contains(string(b), "shrink "+runDir+`" type="wrong"`) {
		t.Errorf("the JUnit failure message lacks %q:\n%s", "replay "+runDir, b)
	}
}

// baselineLine is the gate's line about its baseline ("" when none).
func baselineLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "baseline (") {
			return l
		}
	}
	return ""
}

// lacking is the exec: subject of a worker that omits one of the run's
// secrets: the built-in worker with the variable taken out of its
// environment by env(1), which then execs it (one process, as the
// protocol asks). So a worker written before the credentials were
// required behaves: it never sends them.
func lacking(t *testing.T, variable string) string {
	return "exec:/usr/bin/env -u " + variable + " " + chaostest.Worker(t) + " --recipe seed"
}

// gateStopsAtBaseline gates a subject that cannot run, with the full
// standard set: the baseline, one run of matrix.DefaultBaseline's
// workload, must stop the gate with exit 2 and no cell run, print the
// diagnosis's words (want), and leave the baseline as the JUnit file's
// one failed case. Without the baseline the 15 cells of such a subject
// run minutes each, for nothing. "At once" is checked by what ran, not
// by the wall clock: under the suite's load the baseline's setup alone
// took 18 s, and a bound of 30 s failed a gate that had stopped right.
func gateStopsAtBaseline(t *testing.T, recipe string, want ...string) {
	t.Helper()
	chaostest.NeedEnsemble(t)
	dir := t.TempDir()
	junit := filepath.Join(dir, "gate.xml")
	cmd := exec.CommandContext(t.Context(), chaostest.Binary(t), "gate", "--recipe", recipe, "--junit", junit,
		"--results", filepath.Join(dir, "results"), "--progress", "off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	code := chaostest.ExitOf(cmd.Run())
	took := time.Since(start)
	t.Logf("the gate stopped after %.1fs", took.Seconds())
	if code != 2 {
		t.Fatalf("gate of a subject that cannot run: exit %d after %s, want 2:\n%s", code, took.Round(time.Second), chaostest.Tail(out.String(), 3000))
	}
	for _, w := range append([]string{"chaos gate: stopped before the cells"}, want...) {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the gate's output lacks %q:\n%s", w, chaostest.Tail(out.String(), 3000))
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "gate", "*", "subject_*", "*Z"))
	if len(runs) != 1 || !strings.Contains(runs[0], "baseline") {
		t.Fatalf("run folders %v, want only the baseline's", runs)
	}
	if st, err := store.ReadStatus(filepath.Join(runs[0], store.StatusFile)); err != nil || time.Duration(st.TimeLimitNS) != matrix.DefaultBaseline {
		t.Errorf("the baseline's status %+v, %v: want a run of %s, the baseline's workload", st, err, matrix.DefaultBaseline)
	}
	const baseline = "subject/none/fencing-on/baseline"
	if all, failed := chaostest.JUnitCases(t, junit); len(all) != 1 || len(failed) != 1 || failed[0] != baseline {
		t.Errorf("JUnit cases %v, failed %v; want only %s, failed", all, failed, baseline)
	}
}

// TestGateBaselineNoAuth: a worker that omits the ZooKeeper credential
// is refused its every create (NoAuth): the gate says that the subject
// completed nothing, shows the error and names ZKCHAOS_ZK_AUTH.
func TestGateBaselineNoAuth(t *testing.T) {
	gateStopsAtBaseline(t, lacking(t, "ZKCHAOS_ZK_AUTH"), "it completed no operation", "zk: not authenticated",
		"ZooKeeper credentials:", "ZKCHAOS_ZK_AUTH (digest:USER:PASSWORD)", "stderr of process")
}

// TestGateBaseline401: a worker that omits the register's secret holds
// its locks and is refused every register call (401): the gate says that
// every read failed and names the Authorization header.
func TestGateBaseline401(t *testing.T) {
	gateStopsAtBaseline(t, lacking(t, "ZKCHAOS_REGISTER_SECRET"), "every read failed", "HTTP 401",
		"the register's secret:", `"Authorization: Bearer <secret>"`)
}

// TestGateBadInput: what a CI job gets wrong is reported before anything
// runs, on the first line, with exit 255.
func TestGateBadInput(t *testing.T) {
	exe := chaostest.Binary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("[\n  {\"expect\": {\"grant-overlap\": \"valid\"}, \"nemsis\": [\"none\"]}\n]"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--recipe", "exec:" + filepath.Join(dir, "missing-client")}, "missing-client"},
		{[]string{"--recipe", "no-such-recipe"}, `unknown subject "no-such-recipe"`},
		{[]string{"--recipe", "seed", "--matrix", bad}, bad + `:2:42: json: unknown field "nemsis"`},
		{[]string{"--quick"}, "--recipe is required"},
		{[]string{"--recipe", "seed", "--baseline", "-1s"}, "--baseline must not be negative"},
		{[]string{"--recipe", "seed", "--shrink", "--shrink-budget", "0s"}, "--shrink-budget 0s: must be positive"},
	}
	for _, tc := range cases {
		cmd := exec.CommandContext(t.Context(), exe, append([]string{"gate", "--results", filepath.Join(dir, "results")}, tc.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code := chaostest.ExitOf(cmd.Run())
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != 255 || !strings.Contains(first, tc.want) {
			t.Errorf("gate %v: exit %d, first line %q; want 255 and %q", tc.args, code, first, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "results")); err == nil {
		t.Error("bad input started a run: results/ exists")
	}
}
