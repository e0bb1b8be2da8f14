package postgres

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/resource/register"
)

// short is test-all's short cell (15 s, a fault every 2 s after the
// first) on one ZooKeeper server (chaostest.OneServer): what these tests
// show is the resource's.
var short = append([]string{"--resource", "postgres", "--nemesis", "pause-holder", "--time-limit", "15s", "--nemesis-interval", "2s"},
	chaostest.OneServer()...)

// TestFencedValidUnfencedCaught: the same run with the textbook conditional
// UPDATE (docs/background.md#why-a-lock-needs-a-fence) is valid and without the token condition is caught by
// double-writer, read from the audit table exported into the apply log;
// the log replays as a register's (the unfenced run stops at its first
// violation, as test-all's invalid cells do), each entry carries its request id,
// chaos check of the folder agrees, the data directory is gone and
// nothing of the runs is left.
func TestFencedValidUnfencedCaught(t *testing.T) {
	needPostgres(t)
	for _, c := range []struct {
		fencing string
		code    int
		dw      any
		extra   []string
		// minEntries: the fenced run writes for its whole time limit;
		// the unfenced one stops at its first double write, as early as
		// a loaded machine lets it come (40 entries in one CI run).
		minEntries int
	}{{"on", 0, true, nil, 50}, {"off", 1, false, chaostest.UntilViolation(), 10}} {
		t.Run("fencing-"+c.fencing, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"--fencing", c.fencing, "--seed", "13"}, short...), c.extra...)
			r := run(t, nil, results(t), args...)
			if r.Code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.Code, c.code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
			}
			res := chaostest.ReadResults(t, r.Dir)
			if got := res.Checkers["double-writer"].Valid; got != c.dw {
				t.Fatalf("double-writer %v, want %v", got, c.dw)
			}
			if got := res.Checkers["integrity"].Valid; got != true {
				t.Errorf("integrity %v: the exported log is not what the workers did", got)
			}
			entries, err := register.ReadApplyLog(filepath.Join(r.Dir, store.ApplyLogFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) < c.minEntries {
				t.Fatalf("only %d apply-log entries", len(entries))
			}
			if _, err := register.ReplayAll(entries); err != nil {
				t.Fatalf("the exported log does not replay: %v", err)
			}
			for _, e := range entries {
				if e.Request == "" || e.Mode != c.fencing {
					t.Fatalf("entry %d: request %q, mode %q", e.Seq, e.Request, e.Mode)
				}
			}
			if code, out := chaostest.Check(t, r.Dir); code != c.code {
				t.Errorf("chaos check: exit %d, want %d\n%s", code, c.code, out)
			}
			if _, err := os.Stat(filepath.Join(r.Dir, store.PostgresDir, "data")); err == nil {
				t.Error("the data directory is still there")
			}
			if log, err := os.ReadFile(filepath.Join(r.Dir, store.PostgresDir, "postgres.log")); err != nil || !strings.Contains(string(log), "database system is shut down") {
				t.Errorf("the server's log does not show a clean shutdown (%v)", err)
			}
			chaostest.AssertNothingLeft(t, r.Dir)
		})
	}
}

// TestBadInput: an unknown --resource, missing server binaries (an
// override of the binary directory pointing at an empty one), and a
// subject that cannot take --postgres: the problem on the first line,
// exit 255, no results folder.
func TestBadInput(t *testing.T) {
	needPostgres(t)
	empty := t.TempDir()
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--resource", "bogus"}, `chaos run: --resource "bogus": must be register or postgres`},
		{[]string{"ZKCHAOS_PG_BIN=" + empty}, []string{"--resource", "postgres"}, "--resource postgres: PostgreSQL server binary " + empty + "/initdb missing"},
		{nil, []string{"--resource", "postgres", "--recipe", "exec:/bin/true"}, `--resource postgres: subject "exec:/bin/true" is not a built-in recipe`},
		{nil, []string{"--resource", "postgres", "--workload", "election"}, "--resource postgres: only the lock workload"},
	}
	for _, c := range cases {
		res := filepath.Join(t.TempDir(), "results")
		r := run(t, c.env, res, c.args...)
		first, _, _ := strings.Cut(r.Stderr, "\n")
		if r.Code != 255 || !strings.Contains(first, c.want) {
			t.Errorf("%v: exit %d, first line %q, want 255 and %q", c.args, r.Code, first, c.want)
		}
		if _, err := os.Stat(res); err == nil {
			t.Errorf("%v: a results folder was made", c.args)
		}
	}
}

// TestServerFailsToStart: a postgres binary that exits at once (the real
// initdb beside it, so the cluster is made) is a harness failure that
// says so, exit 255, and leaves nothing running.
func TestServerFailsToStart(t *testing.T) {
	needPostgres(t)
	bin := results(t) // initdb runs as the postgres user, who must reach its link
	if err := os.Symlink("/usr/lib/postgresql/15/bin/initdb", filepath.Join(bin, "initdb")); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'FATAL:  refusing to start (test)' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "postgres"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, []string{"ZKCHAOS_PG_BIN=" + bin}, results(t), append([]string{"--fencing", "on"}, short...)...)
	if r.Code != 255 || !strings.Contains(r.Stderr, "chaos run: harness failure: start postgres: postgres exited (exit status 1): FATAL:  refusing to start (test)") {
		t.Fatalf("exit %d, want 255 and the server's last words\n%s", r.Code, chaostest.Tail(r.Stderr, 2000))
	}
	chaostest.AssertNothingLeft(t, r.Dir)
}

// TestControllerKilled: a controller SIGKILLed while its workers write to
// the server: the janitor removes the server's namespace and with it
// every postgres process (only the postmaster keeps the run's tag in its
// environment: PostgreSQL writes its children's process titles over
// theirs), so nothing of the run is left. chaos check then exports the
// audit table again from the data directory left behind, removes it, and
// leaves nothing running either. The results folder is under a private
// one (t.TempDir's parent, 0700) that the postgres user cannot reach: the
// run works all the same, its data directory in a folder of its own
// outside, linked from the run folder.
func TestControllerKilled(t *testing.T) {
	needPostgres(t)
	res := filepath.Join(t.TempDir(), "results")
	cmd, _, se := chaostest.Start(t, "run", "--results", res, "--progress", "off", "--fencing", "on",
		"--resource", "postgres", "--nemesis", "none", "--time-limit", "5m")
	dir := chaostest.WaitForRun(t, res, se, "20 exported entries", func(d string) bool {
		b, err := os.ReadFile(filepath.Join(d, store.ApplyLogFile))
		return err == nil && strings.Count(string(b), "\n") >= 20
	})
	data, err := filepath.EvalSymlinks(filepath.Join(dir, store.PostgresDir, "data"))
	if err != nil || strings.HasPrefix(data, dir) {
		t.Fatalf("the data directory is at %q (%v), want outside the private run folder", data, err)
	}
	pids, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	chaostest.Crash(t, cmd)
	time.Sleep(3 * time.Second)
	first, _, _ := strings.Cut(string(pids), "\n")
	if pid := atoi(first); pid > 0 && syscall.Kill(pid, 0) == nil {
		t.Errorf("postmaster %d still runs 3 s after the controller died", pid)
	}
	chaostest.AssertNothingLeft(t, dir)

	// The live export lags up to a poll: chaos check exports the audit
	// table again from the data directory the run left, with a server of
	// its own that it stops again.
	before := lines(t, filepath.Join(dir, store.ApplyLogFile))
	code, out := chaostest.Check(t, dir)
	if code == 255 || !strings.Contains(out, "exported again into the apply log") {
		t.Fatalf("chaos check: exit %d\n%s", code, out)
	}
	after := lines(t, filepath.Join(dir, store.ApplyLogFile))
	if after < before {
		t.Errorf("the apply log went from %d to %d entries", before, after)
	}
	entries, err := register.ReadApplyLog(filepath.Join(dir, store.ApplyLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := register.ReplayAll(entries); err != nil {
		t.Fatalf("the re-exported log does not replay: %v", err)
	}
	if dw := chaostest.ReadResults(t, dir).Checkers["double-writer"].Valid; dw != true {
		t.Errorf("double-writer %v after the re-export, want true (every write the history saw succeed is in the log)\n%s", dw, out)
	}
	t.Logf("apply log: %d entries exported live, %d after chaos check's re-export", before, after)
	for _, p := range []string{filepath.Dir(data), filepath.Join(dir, store.PostgresDir, "data")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after chaos check's re-export", p)
		}
	}
	chaostest.AssertNothingLeft(t, dir)
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func atoi(s string) int {
	n := 0
	for _, c := range strings.TrimSpace(s) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
