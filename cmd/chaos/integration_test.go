package main

// Integration tests: the real chaos binary, a real 3-node ZooKeeper
// ensemble, real worker processes, real SIGSTOP, and (as root) real network
// namespaces. They are slow (about a minute per run) and they are the
// contract of the foundation: a fenced run is valid, an unfenced run is
// caught, and nothing a run started survives it, even when its controller
// is SIGKILLed mid-fault.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/netns"
	"github.com/zkchaos/zkchaos/proc"
)

var (
	buildOnce sync.Once
	chaosBin  string
	buildErr  error
)

// binary builds the chaos command once per test process.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zkchaos-bin-")
		if err != nil {
			buildErr = err
			return
		}
		chaosBin = filepath.Join(dir, "chaos")
		out, err := exec.Command("go", "build", "-o", chaosBin, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build chaos: %v", buildErr)
	}
	return chaosBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if chaosBin != "" {
		os.RemoveAll(filepath.Dir(chaosBin))
	}
	os.Exit(code)
}

func needEnsemble(t *testing.T) {
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

type runResult struct {
	code   int
	stdout string
	stderr string
	dir    string // the run folder
}

// chaosRun runs `chaos run` with args and returns its exit code and folder.
func chaosRun(t *testing.T, results string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"run", "--results", results}, args...)...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	r := runResult{code: code, stdout: so.String(), stderr: se.String()}
	if dir, err := filepath.EvalSymlinks(filepath.Join(results, "latest")); err == nil {
		r.dir = dir
	}
	return r
}

type resultsJSON struct {
	Valid    any      `json:"valid"`
	Gate     []string `json:"gate"`
	Checkers map[string]struct {
		Valid      any              `json:"valid"`
		Gating     bool             `json:"gating"`
		ElapsedMS  float64          `json:"elapsed_ms"`
		Violations []map[string]any `json:"violations"`
		// register and mutex (porcupine)
		Partitions     int               `json:"partitions"`
		FailingKeys    []string          `json:"failing_keys"`
		Visualizations map[string]string `json:"visualizations"`
		Note           string            `json:"note"`
		Ops            map[string]struct {
			OK   int `json:"ok"`
			Fail int `json:"fail"`
			Info int `json:"info"`
		} `json:"ops"`
	} `json:"checkers"`
}

func readResults(t *testing.T, dir string) resultsJSON {
	t.Helper()
	return readJSON[resultsJSON](t, dir, "results.json")
}

// readJSON decodes the run folder's file name, failing the test if it is
// missing or not the expected JSON.
func readJSON[T any](t *testing.T, dir, name string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

type testJSON struct {
	RunID   string `json:"run_id"`
	NetMode string `json:"net_mode"`
}

func readTest(t *testing.T, dir string) testJSON {
	t.Helper()
	return readJSON[testJSON](t, dir, "test.json")
}

// assertNothingLeft checks that no process of the run exists (none
// stopped, none running) and, as root, that no namespace, bridge or
// FORWARD rule of a run slot is left.
func assertNothingLeft(t *testing.T, runID string) {
	t.Helper()
	tagged, err := proc.FindTagged(runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tagged {
		st, _ := proc.State(p.PID)
		t.Errorf("process %d of run %s still exists (state %c)", p.PID, runID, st)
	}
	if os.Geteuid() != 0 {
		return
	}
	slots, err := netns.Slots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.RunID == runID || (s.RunID == "" && !s.ControllerAlive) {
			t.Errorf("network slot %d of run %s left: %+v", s.Slot, runID, s)
		}
	}
	out, _ := exec.Command("iptables", "-S", "ZKCHAOS-FWD").CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "-A ZKCHAOS-FWD") {
			// Another run may be in progress in parallel; only rules of
			// slots that no longer exist are leftovers.
			if !slotAlive(slots, line) {
				t.Errorf("FORWARD rule left: %s", line)
			}
		}
	}
}

func slotAlive(slots []netns.SlotInfo, rule string) bool {
	for _, s := range slots {
		if s.ControllerAlive && strings.Contains(rule, "zkc"+strconv.Itoa(s.Slot)+" ") {
			return true
		}
	}
	return false
}

func TestRunRejectsBadFlags(t *testing.T) {
	results := t.TempDir()
	cases := [][]string{
		{"--workers", "0"},
		{"--fencing", "maybe"},
		{"--nemesis", "pause-holder,explode"},
		{"--time-limit", "ten seconds"},
		{"--seed", "x"},
		{"--no-such-flag"},
		{"--session-timeout", "100ms"},
		{"--gate", "nonsense"},
		{"--name", "../escape"},
		{"extra-argument"},
	}
	for _, args := range cases {
		r := chaosRun(t, results, args...)
		if r.code != 255 {
			t.Errorf("chaos run %v: exit %d, want 255\nstderr: %s", args, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "chaos run") && !strings.Contains(r.stderr, "flag") {
			t.Errorf("chaos run %v: no clear error on stderr: %q", args, r.stderr)
		}
	}
	entries, _ := os.ReadDir(results)
	if len(entries) != 0 {
		t.Errorf("bad flags still created %d entries in the results folder", len(entries))
	}
}

func TestFencedRunIsValid(t *testing.T) {
	needEnsemble(t)
	results := t.TempDir()
	r := chaosRun(t, results, "--fencing", "on", "--nemesis", "pause-holder", "--time-limit", "40s", "--seed", "1", "--name", "fenced")
	t.Logf("stdout:\n%s", r.stdout)
	if r.code != 0 {
		t.Fatalf("fenced run exited %d, want 0 (valid)\nstdout: %s\nstderr tail: %s", r.code, r.stdout, tail(r.stderr, 3000))
	}
	res := readResults(t, r.dir)
	if res.Valid != true {
		t.Errorf("results.json valid = %v, want true", res.Valid)
	}
	if !strings.Contains(r.stdout, "run: complete (workload 40s of 40s, final phase ran)") {
		t.Errorf("a finished run does not say it is complete:\n%s", r.stdout)
	}
	if c := readJSON[completionJSON](t, r.dir, "results.json").Completion; c == nil || !c.Completed || c.StoppedBecause != "time-limit" {
		t.Errorf("results.json completion = %+v, want completed by its time limit", c)
	}
	acq := res.Checkers["stats"].Ops["acquire"]
	if acq.OK < 24 {
		t.Errorf("only %d acquisitions completed; want dozens", acq.OK)
	}
	reg := res.Checkers["register"]
	if reg.Valid != true || !reg.Gating || reg.Partitions == 0 || len(reg.FailingKeys) != 0 {
		t.Errorf("register: valid %v gating %v, %d partitions, failing %v; want true, gating, no failing keys",
			reg.Valid, reg.Gating, reg.Partitions, reg.FailingKeys)
	}
	assertMutexReported(t, r.dir, res)
	assertPausesHappened(t, r.dir)
	assertNothingLeft(t, readTest(t, r.dir).RunID)
}

func TestUnfencedRunFindsDoubleWrite(t *testing.T) {
	needEnsemble(t)
	results := t.TempDir()
	r := chaosRun(t, results, "--fencing", "off", "--nemesis", "pause-holder", "--time-limit", "40s", "--seed", "2", "--name", "unfenced")
	t.Logf("stdout:\n%s", r.stdout)
	if r.code != 1 {
		t.Fatalf("unfenced run exited %d, want 1 (invalid)\nstdout: %s\nstderr tail: %s", r.code, r.stdout, tail(r.stderr, 3000))
	}
	res := readResults(t, r.dir)
	if res.Valid != false {
		t.Errorf("results.json valid = %v, want false", res.Valid)
	}
	dw := res.Checkers["double-writer"]
	if dw.Valid != false || len(dw.Violations) == 0 {
		t.Errorf("double-writer: valid %v with %d violations; want false with at least one", dw.Valid, len(dw.Violations))
	}
	// porcupine must find the stale write from what the clients saw.
	reg := res.Checkers["register"]
	if reg.Valid != false || !reg.Gating || len(reg.FailingKeys) == 0 {
		t.Errorf("register: valid %v gating %v failing %v; want false, gating, with failing keys", reg.Valid, reg.Gating, reg.FailingKeys)
	}
	for _, k := range reg.FailingKeys {
		if v := reg.Visualizations[k]; v == "" {
			t.Errorf("register: no visualisation for failing key %s", k)
		} else if _, err := os.Stat(filepath.Join(r.dir, v)); err != nil {
			t.Errorf("register: visualisation of %s: %v", k, err)
		}
	}
	assertMutexReported(t, r.dir, res)
	for _, f := range []string{"history.jsonl", "register.jsonl", "test.json", "results.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(r.dir, f)); err != nil {
			t.Errorf("run folder lacks %s", f)
		}
	}
	html, _ := os.ReadFile(filepath.Join(r.dir, "report.html"))
	if !bytes.Contains(html, []byte("SKU-")) {
		t.Errorf("report.html names no key of a double write")
	}
	// chaos check re-judges the stored run the same way.
	cmd := exec.Command(binary(t), "check", r.dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("chaos check on the unfenced run: %v, want exit 1\n%s", err, out)
	}
	assertNothingLeft(t, readTest(t, r.dir).RunID)
}

// assertMutexReported checks the mutex checker ran, was reported with its
// SIGSTOP caveat, and did not gate; whether it failed depends on whether a
// pause outlasted a session, so its verdict is only logged.
func assertMutexReported(t *testing.T, dir string, res resultsJSON) {
	t.Helper()
	m, ok := res.Checkers["mutex"]
	if !ok || m.Gating || m.Partitions == 0 || !strings.Contains(m.Note, "SIGSTOP") {
		t.Errorf("mutex: present %v gating %v partitions %d note %q; want reported, not gating", ok, m.Gating, m.Partitions, m.Note)
	}
	t.Logf("mutex: valid %v, failing keys %v", m.Valid, m.FailingKeys)
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for k, v := range m.Visualizations {
		if !bytes.Contains(html, []byte(`href="`+v+`"`)) {
			t.Errorf("report.html does not link the mutex page of %s (%s)", k, v)
		}
	}
}

// assertPausesHappened checks the nemesis really paused holders, verified.
func assertPausesHappened(t *testing.T, dir string) {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	verified := 0
	for _, e := range h.Events {
		if e.Process == history.Nemesis && e.F == history.FPause && e.Type == history.OK &&
			e.Value != nil && e.Value.Verified != nil && *e.Value.Verified {
			verified++
		}
	}
	if verified == 0 {
		t.Errorf("no verified pause in the history")
	}
}

// TestKilledControllerLeavesNothing SIGKILLs the controller of an
// unfenced run while a holder is paused: within 2 seconds the janitor must
// have resumed and killed every process of the run and removed its
// namespaces, and the history written so far must still be checkable. The
// check must not call it valid: the stale write the resumed holder would
// have made never happened, so a "valid" here would be a verdict on data
// that is not there.
func TestKilledControllerLeavesNothing(t *testing.T) {
	needEnsemble(t)
	results := t.TempDir()
	cmd, se := startChaos(t, "run", "--results", results, "--name", "killed", "--fencing", "off",
		"--time-limit", "5m", "--nemesis-interval", "1s", "--pause", "30s", "--seed", "3")
	// Wait for a verified pause in the history.
	var dir string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if d, err := filepath.EvalSymlinks(filepath.Join(results, "latest")); err == nil {
			dir = d
			if pausedNow(dir) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if dir == "" || !pausedNow(dir) {
		t.Fatalf("no pause within 90s\nstderr: %s", tail(se.String(), 3000))
	}
	runID := readTest(t, dir).RunID
	tagged, _ := proc.FindTagged(runID)
	stopped := 0
	for _, p := range tagged {
		if proc.Stopped(p.PID) {
			stopped++
		}
	}
	if stopped == 0 {
		t.Fatalf("history says a holder is paused but no process of the run is stopped")
	}
	t.Logf("killing controller pid %d with %d run processes alive, %d stopped", cmd.Process.Pid, len(tagged), stopped)
	crash(t, cmd)
	time.Sleep(2 * time.Second)
	assertNothingLeft(t, runID)

	// What was recorded is still there and checkable, and incomplete.
	code, out := chaosCheck(t, dir)
	if code != 1 && code != 2 {
		t.Errorf("chaos check of a killed unfenced run: exit %d, want 2 (unknown) or 1 (invalid), never 0\n%s", code, out)
	}
	if !strings.Contains(out, "run: INCOMPLETE") {
		t.Errorf("chaos check of a killed run does not say it is incomplete:\n%s", out)
	}
	res := readJSON[completionJSON](t, dir, "results.json")
	if res.Completion == nil || res.Completion.Completed {
		t.Errorf("results.json completion = %+v, want completed false", res.Completion)
	}
}

// completionJSON is the part of results.json that says whether the run
// finished.
type completionJSON struct {
	Valid      any `json:"valid"`
	Completion *struct {
		Completed      bool   `json:"completed"`
		Phase          string `json:"phase"`
		ReachedNS      int64  `json:"reached_ns"`
		TimeLimitNS    int64  `json:"time_limit_ns"`
		FinalPhase     bool   `json:"final_phase"`
		StoppedBecause string `json:"stopped_because"`
		Why            string `json:"why"`
	} `json:"completion"`
}

// chaosCheck runs `chaos check dir` and returns its exit code and output.
func chaosCheck(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary(t), append([]string{"check", dir}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("chaos check: %v\n%s", err, out)
	}
	return 0, string(out)
}

// startChaos starts the chaos binary with args in the background, its
// stderr kept for failure messages. However the test ends, the process is
// killed and reaped, so a failed test leaves no controller running.
func startChaos(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	se := &bytes.Buffer{}
	cmd.Stderr = se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, se
}

// crash SIGKILLs a controller started by startChaos, as a crash would,
// and reaps it: what it leaves behind is the janitor's to clean.
func crash(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// pausedNow reports whether the history's last nemesis event is a
// verified pause (a holder is stopped right now).
func pausedNow(dir string) bool {
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return false
	}
	for i := len(h.Events) - 1; i >= 0; i-- {
		e := h.Events[i]
		if e.Process != history.Nemesis {
			continue
		}
		return e.F == history.FPause && e.Type == history.OK
	}
	return false
}

// TestInterruptedRunStillChecks sends SIGINT mid-run: the run must heal,
// stop everything, and still write its verdict, which is unknown (exit 2):
// an interrupted fenced run has found no violation in part of what it was
// asked to run, and says so on stdout and in results.json.
func TestInterruptedRunStillChecks(t *testing.T) {
	needEnsemble(t)
	results := t.TempDir()
	cmd, so, se, dir := startUntilPaused(t, results, "interrupted", "--time-limit", "5m", "--nemesis-interval", "1s", "--seed", "4")
	_ = cmd.Process.Signal(syscall.SIGINT)
	code := exitOf(cmd.Wait())
	if code != 2 {
		t.Fatalf("interrupted fenced run: exit %d, want 2 (unknown)\nstdout: %s\nstderr: %s", code, so.String(), tail(se.String(), 3000))
	}
	if !strings.Contains(so.String(), "valid: unknown") || !strings.Contains(so.String(), "run: INCOMPLETE: the workload stopped early (interrupted (signal interrupt))") {
		t.Errorf("interrupted run does not say so on stdout:\n%s", so.String())
	}
	res := readJSON[completionJSON](t, dir, "results.json")
	if c := res.Completion; c == nil || c.Completed || !strings.HasPrefix(c.StoppedBecause, "interrupted") || !c.FinalPhase ||
		c.ReachedNS <= 0 || c.ReachedNS >= c.TimeLimitNS {
		t.Errorf("results.json completion = %+v, want an interrupted run that healed (final phase ran) and reached less than its limit", c)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !strings.Contains(string(b), "Run incomplete") {
		t.Errorf("report.html does not say the run is incomplete (%v)", err)
	}
	assertNothingLeft(t, readTest(t, dir).RunID)
}

// TestTwiceInterruptedRun sends SIGINT twice: the second one means stop
// now. Whatever the controller manages after that, the run is never valid
// and nothing of it survives.
func TestTwiceInterruptedRun(t *testing.T) {
	needEnsemble(t)
	results := t.TempDir()
	cmd, so, se, dir := startUntilPaused(t, results, "interrupted-twice", "--time-limit", "5m", "--nemesis-interval", "1s", "--seed", "5")
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(50 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	code := exitOf(cmd.Wait())
	if code == 0 || code == 1 {
		t.Fatalf("twice interrupted fenced run: exit %d, want 2 or 255\nstdout: %s\nstderr: %s", code, so.String(), tail(se.String(), 3000))
	}
	if code == 2 && !strings.Contains(so.String(), "run: INCOMPLETE") {
		t.Errorf("twice interrupted run does not say it is incomplete:\n%s", so.String())
	}
	time.Sleep(2 * time.Second) // the janitor's share, if the controller left any
	assertNothingLeft(t, readTest(t, dir).RunID)
	if code, out := chaosCheck(t, dir); code != 2 {
		t.Errorf("chaos check of a twice interrupted run: exit %d, want 2\n%s", code, out)
	}
}

// startUntilPaused starts a fenced `chaos run` and waits until a holder is
// paused; it returns the command, its stdout and stderr, and the run
// folder. The process is killed when the test ends, whatever happens.
func startUntilPaused(t *testing.T, results, name string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer, string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"run", "--results", results, "--name", name}, args...)...)
	so, se := &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = so, se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if d, err := filepath.EvalSymlinks(filepath.Join(results, "latest")); err == nil && pausedNow(d) {
			return cmd, so, se, d
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no pause within 90s\nstderr: %s", tail(se.String(), 3000))
	return nil, nil, nil, ""
}

// exitOf is the exit code of a finished command (0 for a nil error).
func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
