package services

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// service is one lock service's short runs: its server binary, its
// subject and the settings under which a pause outlasts its lease.
type service struct {
	name, binary, recipe string
	args                 []string
}

var services = []service{
	{"redis", "redis-server", "redis-lock", nil},
	// etcd's lease is at least 2 s: a 2 s session, paused 4 s.
	{"etcd", "etcd", "etcd-mutex", []string{"--session-timeout", "2s"}},
}

// needService skips where the service's server is not installed (make
// test installs it: scripts/install-deps.sh) and holds the machine as
// every ensemble test does.
func needService(t *testing.T, s service) {
	t.Helper()
	chaostest.NeedEnsemble(t)
	if _, err := exec.LookPath(s.binary); err != nil {
		t.Skipf("no %s: run scripts/install-deps.sh (make test does)", s.binary)
	}
}

func runArgs(s service, fencing string) []string {
	return append([]string{"--service", s.name, "--recipe", s.recipe, "--nemesis", "pause-holder", "--fencing", fencing,
		"--time-limit", "12s", "--nemesis-interval", "2s", "--seed", "7", "--progress", "off", "--name", s.name + "-" + fencing}, s.args...)
}

// TestFencedValid: with fencing, the paused holder's stale write is
// turned away and the run is valid (exit 0); its servers were the
// service's, tagged and gone after the run.
func TestFencedValid(t *testing.T) {
	chaostest.LongRun(t)
	t.Parallel()
	for _, s := range services {
		t.Run(s.name, func(t *testing.T) {
			needService(t, s)
			r := chaostest.Run(t, t.TempDir(), runArgs(s, "on")...)
			t.Logf("exit %d\n%s", r.Code, r.Stdout)
			if r.Code != 0 {
				t.Fatalf("exit %d, want 0 (valid)\n%s", r.Code, chaostest.Tail(r.Stderr, 3000))
			}
			chaostest.AssertNothingLeft(t, r.Dir)
			log, err := os.ReadFile(filepath.Join(r.Dir, "zk", "n1", s.name+".log"))
			if err != nil || len(log) == 0 {
				t.Errorf("no %s server log in the run folder: %v", s.name, err)
			}
			if tf := chaostest.ReadTest(t, r.Dir); tf.Service != s.name {
				t.Errorf("test.json records service %q, want %s", tf.Service, s.name)
			}
		})
	}
}

// TestUnfencedCaught: without fencing the paused holder's lease runs out,
// another client is granted, and the stale write lands: the
// double-writer checker catches it (exit 1).
func TestUnfencedCaught(t *testing.T) {
	t.Parallel()
	for _, s := range services {
		t.Run(s.name, func(t *testing.T) {
			needService(t, s)
			r := chaostest.Run(t, t.TempDir(), append(runArgs(s, "off"), chaostest.UntilViolation()...)...)
			t.Logf("exit %d\n%s", r.Code, r.Stdout)
			if r.Code != 1 {
				t.Fatalf("exit %d, want 1 (invalid)\n%s", r.Code, chaostest.Tail(r.Stderr, 3000))
			}
			chaostest.AssertNothingLeft(t, r.Dir)
			dw := chaostest.ReadResults(t, r.Dir).Checkers["double-writer"]
			if dw.Valid != false || len(dw.Violations) == 0 {
				t.Errorf("double-writer %v with %d violations, want a double write caught", dw.Valid, len(dw.Violations))
			}
		})
	}
}

// refused runs chaos run with args (and env added) and checks that it is
// refused before anything starts: exit 255, want on the first line of
// stderr, no run folder.
func refused(t *testing.T, env []string, want string, args ...string) {
	t.Helper()
	results := t.TempDir()
	cmd := exec.Command(chaostest.Binary(t), append([]string{"run", "--results", results, "--time-limit", "5s"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	t.Logf("%v %v: %s (%s)", env, args, first, time.Since(start).Round(time.Millisecond))
	if code := chaostest.ExitOf(err); code != 255 {
		t.Fatalf("exit %d, want 255\n%s", code, out)
	}
	if !strings.Contains(first, want) {
		t.Errorf("first line %q does not say %q", first, want)
	}
	if entries, _ := os.ReadDir(results); len(entries) > 0 {
		t.Errorf("a refused run made %v in its results folder", entries)
	}
}

func TestBadService(t *testing.T) {
	refused(t, nil, `unknown service "memcached" (known: zookeeper, redis, etcd)`, "--service", "memcached")
	refused(t, nil, "only the lock workload runs on it", "--service", "redis", "--workload", "config")
	refused(t, nil, "pause-zk-leader: it acts on zookeeper, and this run is --service etcd", "--service", "etcd", "--nemesis", "pause-zk-leader")
	refused(t, nil, `subject "seed" does not run on redis`, "--service", "redis", "--recipe", "seed")
	refused(t, nil, "expire-holder: it acts on zookeeper or etcd, and this run is --service redis", "--service", "redis", "--nemesis", "expire-holder")
}

// TestMissingServer: the server's package missing, simulated twice: a
// PATH without the binary, and the override naming a file that is not
// there. Both are refused before the run folder exists.
func TestMissingServer(t *testing.T) {
	empty := t.TempDir()
	refused(t, []string{"PATH=" + empty}, "redis-server not found (install Debian's redis-server", "--service", "redis", "--net", "loopback")
	refused(t, []string{"PATH=" + empty}, "etcd not found (install Debian's etcd-server", "--service", "etcd", "--net", "loopback")
	refused(t, []string{"ZKCHAOS_ETCD=" + filepath.Join(empty, "etcd")}, "ZKCHAOS_ETCD="+filepath.Join(empty, "etcd"), "--service", "etcd")
}

// TestServerFailsToStart: a server binary that exits at once (/bin/false
// as etcd) ends the run within seconds with exit 255 and the server's
// exit in the message, and leaves nothing running.
func TestServerFailsToStart(t *testing.T) {
	chaostest.NeedEnsemble(t)
	results := t.TempDir()
	cmd := exec.Command(chaostest.Binary(t), "run", "--results", results, "--service", "etcd", "--time-limit", "5s", "--progress", "off")
	cmd.Env = append(os.Environ(), "ZKCHAOS_ETCD=/bin/false")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if code := chaostest.ExitOf(err); code != 255 {
		t.Fatalf("exit %d, want 255\n%s", code, chaostest.Tail(string(out), 3000))
	}
	if !strings.Contains(string(out), "etcd node 1 exited while starting") && !strings.Contains(string(out), "exited while starting") {
		t.Errorf("the message does not say the server exited:\n%s", chaostest.Tail(string(out), 2000))
	}
	if took > 30*time.Second {
		t.Errorf("took %s to notice a server that exits at once", took)
	}
	dir := chaostest.LatestRun(results)
	if dir == "" {
		t.Fatal("no run folder")
	}
	chaostest.AssertNothingLeft(t, dir)
}
