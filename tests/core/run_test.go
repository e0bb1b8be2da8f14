package core

// Integration tests: the real chaos binary, a real 3-node ZooKeeper
// ensemble, real worker processes, real SIGSTOP, and (as root) real network
// namespaces. They are slow (about a minute per run) and they are the
// contract of the foundation: a fenced run is valid, an unfenced run is
// caught, and nothing a run started survives it, even when its controller
// is SIGKILLed mid-fault.

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

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
		r := chaostest.Run(t, results, args...)
		if r.Code != 255 {
			t.Errorf("chaos run %v: exit %d, want 255\nstderr: %s", args, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "chaos run") && !strings.Contains(r.Stderr, "flag") {
			t.Errorf("chaos run %v: no clear error on stderr: %q", args, r.Stderr)
		}
	}
	entries, _ := os.ReadDir(results)
	if len(entries) != 0 {
		t.Errorf("bad flags still created %d entries in the results folder", len(entries))
	}
}

// TestFencedRunIsValid: a fenced run with the default pause-holder
// schedule runs its whole time limit, is valid on every checker and
// leaves its records. 14 s at the default timing (the first pause at
// the start, then a 2 s pause after every 4 s quiet) hold three pauses
// of a holder past its 1 s session, each a chance of a stale write the
// fence must refuse: the same claim as a longer run, at a third of the
// token time of the 40 s it ran before.
func TestFencedRunIsValid(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	r := chaostest.Run(t, results, "--fencing", "on", "--nemesis", "pause-holder", "--time-limit", "14s", "--seed", "1", "--name", "fenced")
	t.Logf("stdout:\n%s", r.Stdout)
	if r.Code != 0 {
		t.Fatalf("fenced run exited %d, want 0 (valid)\nstdout: %s\nstderr tail: %s", r.Code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
	}
	res := chaostest.ReadResults(t, r.Dir)
	if res.Valid != true {
		t.Errorf("results.json valid = %v, want true", res.Valid)
	}
	if !strings.Contains(r.Stdout, "run: complete (workload 14s of 14s, final phase ran)") {
		t.Errorf("a finished run does not say it is complete:\n%s", r.Stdout)
	}
	if c := chaostest.ReadJSON[completionJSON](t, r.Dir, "results.json").Completion; c == nil || !c.Completed || c.StoppedBecause != "time-limit" {
		t.Errorf("results.json completion = %+v, want completed by its time limit", c)
	}
	acq := res.Checkers["stats"].Ops["acquire"]
	if acq.OK < 12 {
		t.Errorf("only %d acquisitions completed; want at least 12 (one every 2 s of pauses and more between)", acq.OK)
	}
	reg := res.Checkers["register"]
	if reg.Valid != true || !reg.Gating || reg.Partitions == 0 || len(reg.FailingKeys) != 0 {
		t.Errorf("register: valid %v gating %v, %d partitions, failing %v; want true, gating, no failing keys",
			reg.Valid, reg.Gating, reg.Partitions, reg.FailingKeys)
	}
	assertMutexReported(t, r.Dir, res)
	assertPausesHappened(t, r.Dir)
	assertMonitorRecorded(t, r.Dir)
	chaostest.AssertNothingLeft(t, r.Dir)
	assertScheduleRecorded(t, r.Dir)
	assertNothingToReplay(t, r.Dir)
}

// TestUnfencedRunFindsDoubleWrite: an unfenced run under pause-holder is
// invalid through double-writer and porcupine, shows its violations in
// its progress, report and visualisations, and chaos check agrees. It
// runs its 14 s rather than stopping at the first violation, so that the
// progress count and the register's failing keys are judged over a whole
// run; the first double write comes about 2.1 s in (docs/measurements.md,
// "Speed of the gate"), so 14 s (three pauses) hold several.
func TestUnfencedRunFindsDoubleWrite(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	r := chaostest.Run(t, results, "--fencing", "off", "--nemesis", "pause-holder", "--time-limit", "14s", "--seed", "2", "--name", "unfenced")
	t.Logf("stdout:\n%s", r.Stdout)
	if r.Code != 1 {
		t.Fatalf("unfenced run exited %d, want 1 (invalid)\nstdout: %s\nstderr tail: %s", r.Code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
	}
	res := chaostest.ReadResults(t, r.Dir)
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
		} else if _, err := os.Stat(filepath.Join(r.Dir, v)); err != nil {
			t.Errorf("register: visualisation of %s: %v", k, err)
		}
	}
	assertMutexReported(t, r.Dir, res)
	assertProgressCounted(t, r.Stderr, len(dw.Violations))
	assertMonitorRecorded(t, r.Dir)
	for _, f := range []string{"history.jsonl", "register.jsonl", "test.json", "results.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
			t.Errorf("run folder lacks %s", f)
		}
	}
	html, _ := os.ReadFile(filepath.Join(r.Dir, "report.html"))
	if !bytes.Contains(html, []byte("SKU-")) {
		t.Errorf("report.html names no key of a double write")
	}
	// chaos check re-judges the stored run the same way.
	if code, out := chaostest.Check(t, r.Dir); code != 1 {
		t.Errorf("chaos check on the unfenced run: exit %d, want 1\n%s", code, out)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}

// assertProgressCounted checks the progress lines of a run whose stderr
// is no terminal: a plain line every few seconds and one at the end,
// whose online double-writer count rises above zero while the workload
// still runs, never goes down, and ends at the full check's count.
func assertProgressCounted(t *testing.T, stderr string, want int) {
	t.Helper()
	// Before the first violation the line names every online check; then
	// those that found one (the history's find none in this run).
	re := regexp.MustCompile(`^progress: (elapsed \d+s/\d+s( \((\w+)\))?|setup \d+s) .*violations (\d+) \(double-writer(, grant-overlap, token-order, wrong-token)?\)$`)
	// While the ensemble and the workers start (a slow start prints
	// one), nothing has run and no check is online: the line has no
	// count, and says no operation.
	setup := regexp.MustCompile(`^progress: setup \d+s  ops ok 0 fail 0 info 0  fault none$`)
	lines, during, last := 0, 0, -1
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "progress: ") || setup.MatchString(l) {
			continue
		}
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("progress line %q", l)
			continue
		}
		n, _ := strconv.Atoi(m[4])
		if n < last {
			t.Errorf("the violation count went down to %d: %q", n, l)
		}
		last = n
		lines++
		if strings.HasPrefix(m[1], "elapsed") && m[3] == "" {
			during = max(during, n)
		}
	}
	if lines < 4 || during == 0 || last != want {
		t.Errorf("%d progress lines, %d violations counted during the workload, %d at the end (the check found %d); want 4 lines or more, some during, all at the end\n%s",
			lines, during, last, want, chaostest.Tail(stderr, 3000))
	}
	if !strings.Contains(stderr, `msg="online check: first violation" checker=double-writer`) {
		t.Error("the first violation found online was not logged")
	}
}

// assertMutexReported checks the mutex checker ran, was reported with its
// SIGSTOP caveat, and did not gate; whether it failed depends on whether a
// pause outlasted a session, so its verdict is only logged.
func assertMutexReported(t *testing.T, dir string, res chaostest.Results) {
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
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, _, se := chaostest.Start(t, "run", "--results", results, "--name", "killed", "--fencing", "off",
		"--time-limit", "5m", "--nemesis-interval", "1s", "--pause", "30s", "--seed", "3")
	// Wait for a verified pause in the history.
	dir := chaostest.WaitForRun(t, results, se, "pause", chaostest.PausedNow)
	runID := chaostest.ReadTest(t, dir).RunID
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
	chaostest.Crash(t, cmd)
	chaostest.AwaitNothingLeft(t, dir, sweepBound)

	// What was recorded is still there and checkable, and incomplete.
	code, out := chaostest.Check(t, dir)
	if code != 1 && code != 2 {
		t.Errorf("chaos check of a killed unfenced run: exit %d, want 2 (unknown) or 1 (invalid), never 0\n%s", code, out)
	}
	if !strings.Contains(out, "run: INCOMPLETE") {
		t.Errorf("chaos check of a killed run does not say it is incomplete:\n%s", out)
	}
	res := chaostest.ReadJSON[completionJSON](t, dir, "results.json")
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

// TestInterruptedRunStillChecks sends SIGINT mid-run: the run must heal,
// stop everything, and still write its verdict, which is unknown (exit 2):
// an interrupted fenced run has found no violation in part of what it was
// asked to run, and says so on stdout and in results.json.
func TestInterruptedRunStillChecks(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, so, se, dir := chaostest.StartUntilPaused(t, results, "interrupted", "--time-limit", "5m", "--nemesis-interval", "1s", "--seed", "4")
	_ = cmd.Process.Signal(syscall.SIGINT)
	code := chaostest.ExitOf(cmd.Wait())
	if code != 2 {
		t.Fatalf("interrupted fenced run: exit %d, want 2 (unknown)\nstdout: %s\nstderr: %s", code, so.String(), chaostest.Tail(se.String(), 3000))
	}
	if !strings.Contains(so.String(), "valid: unknown") || !strings.Contains(so.String(), "run: INCOMPLETE: the workload stopped early (interrupted (signal interrupt))") {
		t.Errorf("interrupted run does not say so on stdout:\n%s", so.String())
	}
	res := chaostest.ReadJSON[completionJSON](t, dir, "results.json")
	if c := res.Completion; c == nil || c.Completed || !strings.HasPrefix(c.StoppedBecause, "interrupted") || !c.FinalPhase ||
		c.ReachedNS <= 0 || c.ReachedNS >= c.TimeLimitNS {
		t.Errorf("results.json completion = %+v, want an interrupted run that healed (final phase ran) and reached less than its limit", c)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !strings.Contains(string(b), "Run incomplete") {
		t.Errorf("report.html does not say the run is incomplete (%v)", err)
	}
	chaostest.AssertNothingLeft(t, dir)
}

// TestTwiceInterruptedRun sends SIGINT twice: the second one means stop
// now. Whatever the controller manages after that, the run is never valid
// and nothing of it survives.
func TestTwiceInterruptedRun(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd, so, se, dir := chaostest.StartUntilPaused(t, results, "interrupted-twice", "--time-limit", "5m", "--nemesis-interval", "1s", "--seed", "5")
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(50 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	code := chaostest.ExitOf(cmd.Wait())
	if code == 0 || code == 1 {
		t.Fatalf("twice interrupted fenced run: exit %d, want 2 or 255\nstdout: %s\nstderr: %s", code, so.String(), chaostest.Tail(se.String(), 3000))
	}
	if code == 2 && !strings.Contains(so.String(), "run: INCOMPLETE") {
		t.Errorf("twice interrupted run does not say it is incomplete:\n%s", so.String())
	}
	time.Sleep(2 * time.Second) // the janitor's share, if the controller left any
	chaostest.AssertNothingLeft(t, dir)
	if code, out := chaostest.Check(t, dir); code != 2 {
		t.Errorf("chaos check of a twice interrupted run: exit %d, want 2\n%s", code, out)
	}
}
