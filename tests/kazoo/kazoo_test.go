package kazoo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/client/subjects"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// needKazoo skips where Debian's python3 cannot import kazoo (make test
// installs python3-kazoo through scripts/install-deps.sh).
func needKazoo(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(subjects.DefaultPython, "-c", "import kazoo").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import kazoo (run scripts/install-deps.sh): %v: %s", subjects.DefaultPython, err, out)
	}
}

// kazooWorkers is how many workers run runs.
const kazooWorkers = 4

// run is a short kazoo run: kazooWorkers workers on 2 keys, faults from
// the start, on one server (chaostest.OneServer).
func run(t *testing.T, fencing, name string, extra ...string) chaostest.RunResult {
	t.Helper()
	args := append([]string{"--recipe", "kazoo", "--nemesis", "pause-holder", "--fencing", fencing,
		"--time-limit", "12s", "--nemesis-interval", "2s", "--keys", "2", "--workers", strconv.Itoa(kazooWorkers), "--seed", "13",
		"--progress", "off", "--name", name}, chaostest.OneServer()...)
	r := chaostest.Run(t, t.TempDir(), append(args, extra...)...)
	t.Logf("stdout:\n%s", r.Stdout)
	return r
}

// TestFencedValid: kazoo's Lock under pause-holder with fencing is valid,
// after real work (grants and writes through the ACL and the register's
// secret, as many at least as there are workers), and the run leaves
// nothing behind. A quiet machine makes dozens in the 12 s; beside a
// loaded suite (load 10) the four interpreters once made 12 grants and
// 11 writes, so the floor is the workers', not a rate.
func TestFencedValid(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	needKazoo(t)
	r := run(t, "on", "kazoo-fenced")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0 (valid)\nstderr tail: %s", r.Code, chaostest.Tail(r.Stderr, 3000))
	}
	ops := chaostest.ReadResults(t, r.Dir).Checkers["stats"].Ops
	if ops["acquire"].OK < kazooWorkers || ops["write"].OK < kazooWorkers {
		t.Errorf("%d acquisitions and %d writes ok; want at least %d of each (one a worker)", ops["acquire"].OK, ops["write"].OK, kazooWorkers)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}

// TestUnfencedCaught: the same without fencing: a paused holder's stale
// write lands and double-writer names it (exit 1).
func TestUnfencedCaught(t *testing.T) {
	t.Parallel()
	chaostest.NeedEnsemble(t)
	needKazoo(t)
	r := run(t, "off", "kazoo-unfenced", chaostest.UntilViolation()...)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (invalid)\nstderr tail: %s", r.Code, chaostest.Tail(r.Stderr, 3000))
	}
	if v := chaostest.ReadResults(t, r.Dir).Checkers["double-writer"].Valid; v != false {
		t.Errorf("double-writer %v, want false", v)
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}

// TestRefused: a run kazoo cannot serve is refused before anything is
// made: exit 255, the reason on the first line of stderr, no results
// folder, no process. Missing python3-kazoo is simulated honestly: the
// interpreter is a real python3 (a venv of Debian's, without the system's
// packages) that cannot import kazoo.
func TestRefused(t *testing.T) {
	if _, err := os.Stat(subjects.DefaultPython); err != nil {
		t.Skipf("no %s", subjects.DefaultPython)
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(subjects.DefaultPython, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("cannot make a venv: %v: %s", err, out)
	}
	cases := []struct {
		name, python, first string
		args                []string
	}{
		{"python3-kazoo missing", filepath.Join(venv, "bin", "python3"), "python3-kazoo missing", nil},
		{"no interpreter", "/no/such/python3", "no Python interpreter at /no/such/python3", nil},
		{"config workload", "", "subject kazoo serves only the lock workload", []string{"--workload", "config"}},
		{"election workload", "", "subject kazoo serves only the lock workload", []string{"--workload", "election"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			results := filepath.Join(t.TempDir(), "results")
			args := append([]string{"run", "--results", results, "--recipe", "kazoo", "--nemesis", "none",
				"--time-limit", "2s", "--progress", "off"}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, chaostest.Binary(t), args...)
			cmd.Env = append(os.Environ(), subjects.PythonEnv+"="+tc.python)
			var se bytes.Buffer
			cmd.Stderr = &se
			err := cmd.Run()
			if code := chaostest.ExitOf(err); code != 255 {
				t.Errorf("exit %d, want 255\nstderr: %s", code, chaostest.Tail(se.String(), 2000))
			}
			first, _, _ := strings.Cut(se.String(), "\n")
			if !strings.Contains(first, tc.first) {
				t.Errorf("first line of stderr %q does not say %q", first, tc.first)
			}
			if _, err := os.Lstat(results); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("results folder %s exists after a refused run (%v)", results, err)
			}
			chaostest.AssertNothingStarted(t, cmd.Process.Pid)
		})
	}
}
