package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/internal/testkit/dockertest"
)

// short is a run long enough for a few fault cycles: three pauses of a
// holder (2 s quiet, 2 s held) in its 12 s.
var short = []string{"--cluster", "docker", "--time-limit", "12s", "--nemesis-interval", "2s"}

func args(extra ...string) []string { return append(append([]string(nil), short...), extra...) }

// TestBadInputStartsNothing: what the docker backend needs and does not
// find is refused before anything starts, with the reason on the first
// line and exit 255, and no results folder.
func TestBadInputStartsNothing(t *testing.T) {
	chaostest.NeedNetns(t)
	cases := []struct {
		name  string
		wrap  []string // a command the run is started under
		args  []string
		first string
	}{
		// testcontainers-go tries DOCKER_HOST, then the default sockets, so
		// "no engine" is made for real: the run sees /run/docker.sock
		// covered by /dev/null in a mount namespace of its own.
		{"no engine", []string{"unshare", "-m", "--propagation", "private", "sh", "-c",
			`mount --bind /dev/null /run/docker.sock && exec "$@"`, "sh"}, nil,
			"chaos run: --cluster docker: no Docker engine reachable"},
		{"loopback", nil, []string{"--net", "loopback"}, "--cluster: docker needs --net netns"},
		{"missing image", nil, []string{"--image", "zkchaos/zookeeper:no-such-tag", "--no-build"},
			"chaos run: --image zkchaos/zookeeper:no-such-tag: no such image on this engine (images are never pulled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			switch tc.name {
			case "missing image":
				dockertest.Need(t)
			case "no engine":
				if _, err := os.Stat("/run/docker.sock"); err != nil {
					t.Skipf("no /run/docker.sock to hide (%v)", err)
				}
			}
			results := t.TempDir() + "/results"
			argv := append(append(append([]string(nil), tc.wrap...), chaostest.Binary(t), "run", "--results", results, "--nemesis", "none"), args(tc.args...)...)
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			first, _, _ := strings.Cut(string(out), "\n")
			if code := chaostest.ExitOf(err); code != 255 || !strings.Contains(first, tc.first) {
				t.Errorf("exit %d, first line %q; want 255 and %q\n%s", code, first, tc.first, chaostest.Tail(string(out), 2000))
			}
			if _, err := os.Stat(results); err == nil {
				t.Errorf("refused run made its results folder %s", results)
			}
		})
	}
}

// TestVerdictsMatchLocal: on containers as on local JVMs, a fenced run
// under holder pauses is valid and an unfenced one is caught writing
// twice; both leave nothing of the run behind.
//
// It is slow because it makes two docker runs one after another, each
// starting three containers: the fenced one runs its 12 s so that three
// holders are paused (4 s apart) while it stays valid, and the unfenced
// one runs until its first double write, up to
// matrix.DefaultLimit. That second run is why its time varies: whether a
// pause makes a stale write land is a race in the paused worker.
func TestVerdictsMatchLocal(t *testing.T) {
	t.Parallel()
	dockertest.Need(t)
	results := t.TempDir()
	for _, tc := range []struct {
		fencing string
		code    int
	}{{"on", 0}, {"off", 1}} {
		a := args("--name", "fencing-"+tc.fencing, "--nemesis", "pause-holder", "--fencing", tc.fencing, "--seed", "7")
		if tc.code == 1 {
			a = append(a, chaostest.UntilViolation()...)
		}
		r := chaostest.Run(t, results, a...)
		if r.Code != tc.code {
			t.Fatalf("--fencing %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.fencing, r.Code, tc.code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
		}
		res := chaostest.ReadResults(t, r.Dir)
		if tc.code == 1 && !strings.Contains(r.Stdout, "double-writer  false") {
			t.Errorf("unfenced docker run invalid but not for a double write:\n%s (%+v)", r.Stdout, res)
		}
		if tf := chaostest.ReadTest(t, r.Dir); tf.RunID == "" {
			t.Fatal("test.json has no run id")
		} else {
			chaostest.AssertNothingLeft(t, r.Dir)
			dockertest.AssertNoneLeft(t, tf.RunID)
		}
	}
}

// TestServerFaults: pause, kill and partitions of containerised servers,
// each verified by the backend inside the container and undone with the
// ensemble whole again, and the fenced run valid.
//
// The run follows a schedule (chaostest.Sequence) that injects each of
// the three faults once, held 3 s, one after another: each start counts
// only once verified through the engine, for a leader's fault once a new
// leader is seen (1.0–3.1 s on docker, docs/measurements.md), which
// delays the entries after it; the run ends once the last is undone. The
// containers' start and removal come on top, and so does any wait for a
// run token held by the package's other tests (all t.Parallel) or by
// other packages.
func TestServerFaults(t *testing.T) {
	t.Parallel()
	dockertest.Need(t)
	sched := chaostest.Sequence(t, 3*time.Second, "pause-zk-leader", "kill-zk", "partition-zk-leader")
	r := chaostest.Run(t, t.TempDir(), append(sched, "--cluster", "docker", "--fencing", "on", "--seed", "3")...)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, chaostest.Tail(r.Stderr, 3000))
	}
	starts, kinds := 0, map[string]bool{}
	for _, op := range chaostest.FaultOps(t, r.Dir) {
		switch op.F {
		case history.FPause, history.FKill, history.FPartition:
			starts++
			kinds[op.F] = true
		case history.FResume, history.FRestart, history.FHeal, history.FRestore:
		default:
			continue
		}
		if op.Type != history.OK || !op.Verified {
			t.Errorf("%s %s, verified %v: %s %s", op.F, op.Type, op.Verified, op.Value.Detail, op.Err)
		}
		t.Logf("%s in %s: %s: %s", op.F, op.Took.Round(time.Millisecond), op.Value.Target, op.Value.Detail)
	}
	if starts != 3 || len(kinds) != 3 {
		t.Errorf("%d faults of %d kinds, want 3 of 3 (one each of the schedule)", starts, len(kinds))
	}
	chaostest.AssertNothingLeft(t, r.Dir)
	dockertest.AssertNoneLeft(t, chaostest.ReadTest(t, r.Dir).RunID)
}

// TestKilledControllerLeavesNothing SIGKILLs the controller while servers
// are partitioned inside their containers: within dockerSweepBound nothing
// of the run is left (no container, Docker network, namespace, rule or
// process). The janitor's log says how long its sweep took.
//
// Its own steps are one docker ensemble's start, the first partition
// verified (WaitForRun allows 90 s), the SIGKILL and the janitor's sweep
// (up to dockerSweepBound); when it takes more than a minute, the rest is
// waiting inside the test: for a run token held by the package's other
// tests (all t.Parallel) or by other packages, or for the binaries' shared
// build (chaostest.Binary).
func TestKilledControllerLeavesNothing(t *testing.T) {
	t.Parallel()
	dockertest.Need(t)
	results := t.TempDir()
	cmd, _, se := chaostest.Start(t, append([]string{"run", "--results", results, "--name", "killed"},
		args("--time-limit", "5m", "--pause", "60s", "--nemesis", "partition-zk-halves", "--fencing", "on")...)...)
	dir := chaostest.WaitForRun(t, results, se, "verified partition", func(d string) bool {
		e := chaostest.LastNemesis(d)
		return e != nil && e.F == history.FPartition && e.Type == history.OK && chaostest.Verified(e)
	})
	runID := chaostest.ReadTest(t, dir).RunID
	chaostest.Crash(t, cmd)
	took := dockertest.WaitNoneLeft(t, dir, dockerSweepBound)
	dockertest.AssertNoneLeft(t, runID)
	chaostest.AssertNothingLeft(t, dir)
	t.Logf("nothing left %s after the kill (bound %s); %s", took.Round(time.Millisecond), dockerSweepBound, janitorSwept(dir))
}

// dockerSweepBound is how long the janitor may take to remove a killed
// run's containers, network and namespaces. The engine's removals are
// the slow part (a few hundred ms a container on a quiet machine, seconds
// when CI runs other packages beside this one: 2 s was missed once there).
const dockerSweepBound = 10 * time.Second

// janitorSwept is the janitor's own account of its sweep (its log's
// "swept" line, which says how long it took).
func janitorSwept(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, store.JanitorLog))
	for _, l := range slices.Backward(strings.Split(string(b), "\n")) {
		if strings.Contains(l, "janitor: swept") {
			return strings.TrimSpace(l)
		}
	}
	return "no sweep in " + store.JanitorLog
}
