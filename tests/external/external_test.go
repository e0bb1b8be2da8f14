package external

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/history/store"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
)

// sentinel is a znode of the test's own, beside the runs' subtrees: no
// run may touch it.
const sentinel = "/zkchaos-test-sentinel"

// ensemble starts three servers on 127.0.0.1 that answer srvr only (no
// mntr, no cons: the runs' monitor and faults must live with a server
// that refuses four-letter words), and returns their addresses and a
// session to look at their data.
func ensemble(t *testing.T) (addrs string, conn *zk.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := local.Launch(ctx, local.Config{Nodes: 3, Dir: filepath.Join(t.TempDir(), "zk"),
		MaxSessionTimeout: 10 * time.Second, FourLetterWords: []string{"srvr"},
		Env: proc.Env("test-external", proc.Self())})
	if err != nil {
		t.Fatalf("start the test's ensemble: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("stop the test's ensemble: %v", err)
		}
	})
	conn, _, err = zk.Connect(strings.Split(c.ConnectString(), ","), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if _, err := conn.Create(sentinel, []byte("mine"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", sentinel, err)
	}
	return c.ConnectString(), conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// runArgs are a short pause-holder run against addrs.
func runArgs(addrs, fencing string, extra ...string) []string {
	return append([]string{"--cluster", "external", "--zk", addrs, "--nemesis", "pause-holder", "--fencing", fencing,
		"--time-limit", "12s", "--nemesis-interval", "2s", "--seed", "7", "--name", "external-" + fencing}, extra...)
}

// assertOnlyTestsLeft checks that the runs left nothing on the ensemble
// but the empty /zkchaos parent, and that the test's znode is intact.
func assertOnlyTestsLeft(t *testing.T, conn *zk.Conn, runID string) {
	t.Helper()
	if ok, _, err := conn.Exists("/zkchaos/" + runID); err != nil || ok {
		t.Errorf("run %s's subtree /zkchaos/%s still exists (err %v)", runID, runID, err)
	}
	if kids, _, err := conn.Children("/zkchaos"); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Error(err)
	} else if len(kids) > 0 {
		t.Errorf("/zkchaos holds %v after the runs", kids)
	}
	data, _, err := conn.Get(sentinel)
	if err != nil || string(data) != "mine" {
		t.Errorf("the test's %s: %q, %v", sentinel, data, err)
	}
	root, _, err := conn.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range root {
		if n != "zookeeper" && n != "zkchaos" && n != strings.TrimPrefix(sentinel, "/") {
			t.Errorf("znode /%s on the ensemble: not the test's, not /zkchaos", n)
		}
	}
}

func TestExternal(t *testing.T) {
	chaostest.LongRun(t)
	chaostest.NeedEnsemble(t)
	addrs, conn := ensemble(t)
	results := t.TempDir()

	t.Run("fenced valid", func(t *testing.T) {
		r := chaostest.Run(t, results, runArgs(addrs, "on")...)
		if r.Code != 0 {
			t.Fatalf("fenced run exit %d, want 0 (valid)\n%s", r.Code, chaostest.Tail(r.Stderr, 30))
		}
		assertRun(t, r.Dir, conn)
	})
	t.Run("unfenced caught", func(t *testing.T) {
		r := chaostest.Run(t, results, runArgs(addrs, "off")...)
		if r.Code != 1 {
			t.Fatalf("unfenced run exit %d, want 1 (invalid)\n%s", r.Code, chaostest.Tail(r.Stderr, 30))
		}
		assertRun(t, r.Dir, conn)
	})
	t.Run("controller killed", func(t *testing.T) {
		killed(t, conn, addrs)
	})
	t.Run("controller and janitor killed", func(t *testing.T) {
		orphaned(t, conn, addrs)
	})
	t.Run("server fault refused", func(t *testing.T) {
		refused(t, "pause-zk: the external backend cannot pause a server", "--cluster", "external", "--zk", addrs, "--nemesis", "pause-zk")
	})
	t.Run("session timeout the ensemble does not grant refused", func(t *testing.T) {
		// The test's servers grant at most 10 s (MaxSessionTimeout above).
		refused(t, "--session-timeout 15s: the ensemble at "+addrs+" grants 10s instead", "--cluster", "external", "--zk", addrs,
			"--session-timeout", "15s", "--time-limit", "2m")
	})
	t.Run("unreachable refused", func(t *testing.T) {
		refused(t, "ZooKeeper at 127.0.0.1:1:", "--cluster", "external", "--zk", addrs+",127.0.0.1:1")
	})
}

// assertRun checks what a finished run against the ensemble did: its
// pause-holder took effect, its workers went through the relays when it
// had namespaces, its subtree was made and removed, and nothing of it is
// left on the machine.
func assertRun(t *testing.T, dir string, conn *zk.Conn) {
	t.Helper()
	tf := chaostest.ReadTest(t, dir)
	log, err := os.ReadFile(filepath.Join(dir, store.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lock_root=/zkchaos/" + tf.RunID + "/locks/inventory", "root=/zkchaos/" + tf.RunID + " znodes="}
	if tf.NetMode == "netns" {
		want = append(want, "relay for the workers")
	}
	for _, w := range want {
		if !strings.Contains(string(log), w) {
			t.Errorf("controller log lacks %q", w)
		}
	}
	paused := 0
	for _, op := range chaostest.FaultOps(t, dir) {
		if op.F == history.FPause && op.Type == history.OK && op.Verified {
			paused++
		}
	}
	if paused == 0 {
		t.Errorf("no verified pause of a holder in the history")
	}
	t.Logf("run %s (%s): %d holders paused", tf.RunID, tf.NetMode, paused)
	assertOnlyTestsLeft(t, conn, tf.RunID)
	chaostest.AssertNothingLeft(t, dir)
}

// refused runs chaos run with args and checks it exits 255 with want on
// its first line of stderr, having made nothing.
func refused(t *testing.T, want string, args ...string) {
	t.Helper()
	results := t.TempDir()
	cmd, _, stderr := chaostest.Start(t, append([]string{"run", "--results", results}, args...)...)
	err := cmd.Wait()
	if code := chaostest.ExitOf(err); code != 255 {
		t.Fatalf("exit %d, want 255\n%s", code, stderr)
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !strings.Contains(first, want) {
		t.Errorf("first line %q lacks %q", first, want)
	}
	if ents, _ := os.ReadDir(results); len(ents) > 0 {
		t.Errorf("a refused run made %d entries in its results folder", len(ents))
	}
	chaostest.AssertNothingStarted(t, cmd.Process.Pid)
}

// killed SIGKILLs a controller while a holder is paused: its janitor,
// told the run's subtree and identity, removes the subtree (protected
// by the run's digest ACL) once it has swept the run's processes.
func killed(t *testing.T, conn *zk.Conn, addrs string) {
	cmd, dir, runID, root := startPaused(t, addrs, "external-killed")
	if ok, _, err := conn.Exists(root + "/locks/inventory/SKU-1"); err != nil || !ok {
		t.Fatalf("%s/locks/inventory/SKU-1 missing mid-run (err %v)", root, err)
	}
	jan := chaostest.JanitorPID(runID)
	if jan == 0 {
		t.Fatal("janitor of the run not found")
	}
	start := time.Now()
	chaostest.Crash(t, cmd)
	for proc.Alive(jan) && time.Since(start) < 60*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if proc.Alive(jan) {
		t.Fatalf("janitor %d still running 60 s after the controller died", jan)
	}
	jlog, _ := os.ReadFile(filepath.Join(dir, store.JanitorLog))
	removed := ""
	for _, l := range strings.Split(string(jlog), "\n") {
		if strings.Contains(l, "the run's znodes removed") {
			removed = l
		}
	}
	if removed == "" {
		t.Errorf("janitor log says no removal of the run's znodes:\n%s", jlog)
	}
	t.Logf("janitor done %s after the controller's death: %s", time.Since(start).Round(time.Millisecond), removed)
	assertOnlyTestsLeft(t, conn, runID)
	chaostest.AssertNothingLeft(t, dir)
}

// orphaned SIGKILLs a controller and its janitor together while a holder
// is paused: nobody holding the run's identity is left, and its subtree
// stays on the ensemble until chaos cleanup (or the next run's start)
// removes it through the record the run kept on this machine. A second
// cleanup finds nothing of the run.
func orphaned(t *testing.T, conn *zk.Conn, addrs string) {
	cmd, dir, runID, root := startPaused(t, addrs, "external-orphaned")
	if !chaostest.KillControllerAndJanitor(t, cmd, runID) {
		t.Fatal("janitor of the run not found")
	}
	time.Sleep(500 * time.Millisecond)
	if ok, _, err := conn.Exists(root + "/locks/inventory/SKU-1"); err != nil || !ok {
		// Every run's start sweeps dead runs: another test package's may
		// have been first.
		t.Logf("%s gone before chaos cleanup (err %v): another run's start swept it", root, err)
	}
	for i, want := range []bool{true, false} {
		out, err := exec.Command(chaostest.Binary(t), "cleanup").CombinedOutput()
		if err != nil {
			t.Fatalf("chaos cleanup #%d: %v\n%s", i+1, err, out)
		}
		t.Logf("chaos cleanup #%d:\n%s", i+1, out)
		said := strings.Contains(string(out), "run "+runID+": znodes "+root+" on "+addrs+" removed")
		if said && !want {
			t.Errorf("chaos cleanup #%d removed %s again", i+1, root)
		}
		if i == 0 && !said {
			t.Logf("chaos cleanup #1 does not name %s: another run's start swept it", root)
		}
	}
	assertOnlyTestsLeft(t, conn, runID)
	chaostest.AssertNothingLeft(t, dir)
}

// startPaused starts a fenced 60 s run on the ensemble at addrs and
// waits until a holder is paused; it returns the run's command, folder,
// id and subtree root.
func startPaused(t *testing.T, addrs, name string) (cmd *exec.Cmd, dir, runID, root string) {
	t.Helper()
	cmd, _, _, dir = chaostest.StartUntilPaused(t, t.TempDir(), name, runArgs(addrs, "on", "--time-limit", "60s")...)
	runID = chaostest.ReadTest(t, dir).RunID
	return cmd, dir, runID, "/zkchaos/" + runID
}
