package chaostest

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// UntilViolation are the flags of a run that must be caught: it stops at
// its first violation, and runs up to UntilViolationLimit to find one, as
// test-all's cells that expect only violations do. Given after a run's
// own --time-limit, they override it. Whether one fault makes a violation
// is a race in the faulted client, so a fixed short time is a rate that
// a loaded machine lowers; this way the load costs time, not detection,
// and a quiet machine stops early.
func UntilViolation() []string {
	return []string{"--stop-at-first", "--time-limit", UntilViolationLimit.String()}
}

// UntilViolationLimit is test-all's limit for such cells
// (matrix.DefaultLimit; a test of this package keeps the two equal). It
// is not taken from run/matrix, which would link every subject's client
// into each test binary that uses this package.
const UntilViolationLimit = 2 * time.Minute

// OneServer are the flags of a run on one ZooKeeper server instead of
// three, for a test of what clients do (client faults, recipes,
// workloads, ACLs): nothing it shows depends on how many servers
// replicate the client's writes, and one server starts in half the time
// with a third of the servers' CPU, which the suite's other runs get
// instead (docs/measurements.md, "Integration test packages"). Tests of
// server faults, backends and the default run keep three.
func OneServer() []string { return []string{"--nodes", "1"} }

// RunResult is what a finished `chaos run` left: its exit code (the
// verdict), its output, and its run folder.
type RunResult struct {
	Code   int
	Stdout string
	Stderr string
	Dir    string // the run folder; "" when the run made none
}

// Run runs `chaos run --results results args...` to its end and returns
// its exit code, output and run folder. A run that cannot be started at
// all fails the test; any exit code is the caller's to judge.
func Run(t *testing.T, results string, args ...string) RunResult {
	t.Helper()
	cmd := exec.Command(Binary(t), append([]string{"run", "--results", results}, args...)...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	if !exited(err) {
		t.Fatalf("chaos run: %v", err)
	}
	// The run's own phases beside its whole time, so that the suite's
	// stream (make test keeps it) shows where a test's run time went.
	t.Logf("chaos run took %s, exit %d; %s", time.Since(start).Round(100*time.Millisecond), ExitOf(err), timingsLine(so.String()))
	return RunResult{Code: ExitOf(err), Stdout: so.String(), Stderr: se.String(), Dir: LatestRun(results)}
}

// LatestRun is the run folder results/latest points at, "" while there is
// none: a run makes its folder (and the link) early, so a test can watch a
// run in progress through it.
func LatestRun(results string) string {
	dir, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if err != nil {
		return ""
	}
	return dir
}

// Check runs `chaos check dir args...` (bounded at 2 minutes, a hung check
// being a failure) and returns its exit code and combined output.
func Check(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, Binary(t), append([]string{"check", dir}, args...)...).CombinedOutput()
	if !exited(err) {
		t.Fatalf("chaos check: %v\n%s", err, out)
	}
	return ExitOf(err), string(out)
}

// Start starts the chaos binary with args in the background, its stdout
// and stderr kept for assertions and failure messages. However the test
// ends, the process is killed and reaped, so a failed test leaves no
// controller running (its janitor then cleans up after it).
func Start(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(Binary(t), args...)
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stdout, stderr
}

// Crash SIGKILLs a controller started by Start, as a crash would, and
// reaps it: what it leaves behind is the janitor's to clean.
func Crash(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// WaitForRun waits up to 90 s (an ensemble's start plus a few fault
// cycles) until the latest run folder under results satisfies ready, and
// returns it; otherwise it fails the test saying that no what happened,
// with the tail of the run's stderr. Tests that act on a run in a given
// state (kill it, interrupt it, fill its disk) start from here.
func WaitForRun(t *testing.T, results string, stderr *bytes.Buffer, what string, ready func(dir string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if dir := LatestRun(results); dir != "" && ready(dir) {
			return dir
		}
	}
	t.Fatalf("no %s within 90s\nstderr: %s", what, Tail(stderr.String(), 3000))
	return ""
}

// StartUntilPaused starts `chaos run --results results --name name
// args...` and waits until a holder is paused (PausedNow); it returns the
// command, its stdout and stderr, and the run folder. The process is
// killed when the test ends, whatever happens.
func StartUntilPaused(t *testing.T, results, name string, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer, dir string) {
	t.Helper()
	cmd, stdout, stderr = Start(t, append([]string{"run", "--results", results, "--name", name}, args...)...)
	dir = WaitForRun(t, results, stderr, "pause", PausedNow)
	return cmd, stdout, stderr, dir
}

// timingsLine is the "timings:" line of a run's summary, or a note that
// it has none (a run refused or ended before its summary).
func timingsLine(stdout string) string {
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "timings: ") {
			return l
		}
	}
	return "no timings line"
}
