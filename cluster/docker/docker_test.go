package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/testcontainers/testcontainers-go"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/docker/engine"
	"github.com/zkchaos/zkchaos/cluster/docker/image"
	"github.com/zkchaos/zkchaos/host/proc"
)

// helperEnv makes the test binary a controller that builds an ensemble,
// faults it and waits to be SIGKILLed (TestCleanupAfterControllerCrash).
const helperEnv = "ZKCHAOS_DOCKER_TEST_CONTROLLER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(crashingController(spec))
	}
	os.Exit(m.Run())
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

var (
	imageOnce sync.Once
	imageTag  string
	imageErr  error
)

// needImage skips where no Docker engine is reachable, and otherwise
// builds the image once per machine (a later run finds it by tag).
func needImage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("docker ensemble test (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if errors.Is(err, engine.ErrNoEngine) {
		t.Skipf("docker backend not tested: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	imageOnce.Do(func() {
		var res image.Result
		res, imageErr = image.Build(ctx, cli, image.Options{Logger: testLogger(t)})
		imageTag = res.Tag
		if res.Built {
			t.Logf("MEASURE image build: %s in %s, %d MB", res.Tag, res.Took.Round(time.Second), res.Size/1e6)
		}
	})
	if imageErr != nil {
		t.Fatalf("image: %v", imageErr)
	}
	return imageTag
}

func newRunID() string { return "t" + uuid.NewString()[:8] }

// launch makes and starts an ensemble of 3 and waits until it serves. Its
// Close, and a Cleanup by label should Close fail, run at the test's end.
func launch(t *testing.T, ctx context.Context, tag, run, dir string) *Cluster {
	t.Helper()
	c, err := New(ctx, Config{Nodes: 3, Dir: dir, RunID: run, Image: tag, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if did, err := Cleanup(context.Background(), run); err != nil || len(did) > 0 {
			t.Errorf("left after Close: %q, %v", did, err)
		}
	})
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASURE start-to-ready %s", time.Since(start).Round(time.Millisecond))
	return c
}

func roles(t *testing.T, ctx context.Context, c *Cluster) (leader *Node, followers []*Node) {
	t.Helper()
	for _, s := range cluster.Statuses(ctx, c, time.Second) {
		n := s.Node.(*Node)
		switch {
		case s.Err != nil || !s.Status.Serving:
			t.Fatalf("node %d not serving: %s", n.ID(), cluster.Summary(cluster.Statuses(ctx, c, time.Second)))
		case s.Status.Mode == "leader":
			leader = n
		default:
			followers = append(followers, n)
		}
	}
	if leader == nil || len(followers) != 2 {
		t.Fatalf("want a leader and 2 followers: %s", cluster.Summary(cluster.Statuses(ctx, c, time.Second)))
	}
	return leader, followers
}

// until polls cond (waitUntil) and returns how long it took to hold.
func until(t *testing.T, ctx context.Context, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	// waitUntil's rule: only a look begun after the limit fails the test.
	err := waitUntil(ctx, limit, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return time.Since(start)
}

func newLeaderOther(ctx context.Context, c *Cluster, old *Node) func() bool {
	return func() bool {
		l, err := cluster.Leader(ctx, c)
		return err == nil && l != old
	}
}

func notServing(ctx context.Context, n *Node) func() bool {
	return func() bool {
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		st, err := n.Status(sctx)
		return err != nil || !st.Serving
	}
}

func timed(t *testing.T, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return time.Since(start)
}

func connect(t *testing.T, servers string) *zk.Conn {
	t.Helper()
	conn, ev, err := zk.Connect(strings.Split(servers, ","), 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			conn.Close()
			t.Fatalf("no session with %s", servers)
		}
	}
}

// TestEnsembleFaults runs every verb of the backend against a real
// ensemble of containers and checks each effect from outside the backend
// too: ZooKeeper's own srvr answers, the host's /proc, the engine's
// labels, a znode that must survive restarts. MEASURE lines are the
// figures of docs/architecture.md.
func TestEnsembleFaults(t *testing.T) {
	tag := needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, dir := newRunID(), t.TempDir()
	c := launch(t, ctx, tag, run, dir)

	t.Run("addresses and labels", func(t *testing.T) {
		nw := c.Network()
		if !Reserved.Contains(nw.Subnet.Addr()) {
			t.Errorf("network subnet %s outside %s", nw.Subnet, Reserved)
		}
		rs, err := runs(ctx, c.cli, run)
		if err != nil || len(rs) != 1 || len(rs[0].Containers) != 3 || len(rs[0].Networks) != 1 || rs[0].Owners.Controller.PID != os.Getpid() {
			t.Errorf("labelled for run %s: %+v, %v; want 3 containers, 1 network, controller %d", run, rs, err, os.Getpid())
		}
		for _, n := range c.nodes {
			if ip := n.IP(); ip != serverAddr(nw.Subnet, n.ID()).String() {
				t.Errorf("node %d at %s", n.ID(), ip)
			}
			if out, err := n.exec(ctx, "ps", "-o", "comm=", "-p", "1"); err != nil || out != "java" {
				t.Errorf("node %d PID 1 is %q (%v), want java", n.ID(), out, err)
			}
		}
	})

	conn := connect(t, c.ConnectString())
	if _, err := conn.Create("/zkchaos-docker", []byte("survives"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	t.Run("pause and resume a follower", func(t *testing.T) {
		_, fs := roles(t, ctx, c)
		f := fs[0]
		took := timed(t, "pause", func() error { _, err := f.Pause(ctx); return err })
		if s, err := proc.State(hostPID(t, ctx, f)); err != nil || s != 'T' {
			t.Errorf("paused node %d: host pid %d state %c, %v; want T", f.ID(), hostPID(t, ctx, f), s, err)
		}
		if p, err := f.Process(ctx); err != nil || !p.Stopped {
			t.Errorf("Process = %+v, %v after Pause, want stopped", p, err)
		}
		if !notServing(ctx, f)() {
			t.Errorf("paused node %d still answers srvr", f.ID())
		}
		heal := timed(t, "resume", func() error { _, err := f.Resume(ctx); return err })
		if s, _ := proc.State(hostPID(t, ctx, f)); s == 'T' {
			t.Errorf("resumed node %d still stopped", f.ID())
		}
		back := until(t, ctx, "follower serving again", 20*time.Second, func() bool { return !notServing(ctx, f)() })
		t.Logf("MEASURE pause follower: stopped (verified) in %s; resume verified in %s, serving %s later", took.Round(time.Millisecond), heal.Round(time.Millisecond), back.Round(time.Millisecond))
	})

	t.Run("pause the leader", func(t *testing.T) {
		l, _ := roles(t, ctx, c)
		took := timed(t, "pause", func() error { _, err := l.Pause(ctx); return err })
		elect := until(t, ctx, "new leader", 30*time.Second, newLeaderOther(ctx, c, l))
		heal := timed(t, "resume", func() error { _, err := l.Resume(ctx); return err })
		start := time.Now()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		nl, _ := roles(t, ctx, c)
		if nl == l {
			t.Errorf("node %d leads again after its pause; a new leader was seen during it", l.ID())
		}
		t.Logf("MEASURE pause leader: stopped in %s, new leader n%d elected %s after; resume in %s, whole again %s later",
			took.Round(time.Millisecond), nl.ID(), elect.Round(time.Millisecond), heal.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	})

	t.Run("kill and start the leader", func(t *testing.T) {
		l, _ := roles(t, ctx, c)
		pid := hostPID(t, ctx, l)
		took := timed(t, "kill", func() error { _, err := l.Kill(ctx); return err })
		if hostPID(t, ctx, l) != 0 || proc.Alive(pid) {
			t.Fatalf("node %d (host pid %d) alive after Kill", l.ID(), pid)
		}
		if !notServing(ctx, l)() {
			t.Errorf("killed node %d answers srvr", l.ID())
		}
		elect := until(t, ctx, "new leader", 30*time.Second, newLeaderOther(ctx, c, l))
		heal := timed(t, "start", func() error { _, err := l.Start(ctx); return err })
		start := time.Now()
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		if now := hostPID(t, ctx, l); now == 0 || now == pid {
			t.Errorf("restarted node %d pid %d (was %d)", l.ID(), now, pid)
		}
		t.Logf("MEASURE kill leader: dead (verified) in %s, new leader %s after; start in %s, whole again %s later",
			took.Round(time.Millisecond), elect.Round(time.Millisecond), heal.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	})

	isolate := func(t *testing.T, n *Node, what string, effect func() bool) {
		var peers []cluster.Node
		for _, m := range c.nodes {
			if m != n {
				peers = append(peers, m)
			}
		}
		start := time.Now()
		if _, err := n.Isolate(ctx, peers); err != nil {
			t.Fatal(err)
		}
		rulesIn := time.Since(start)
		rules, err := n.Rules(ctx)
		if err != nil || len(rules) != 4 {
			t.Errorf("rules of isolated node %d: %q, %v; want 4 DROP rules", n.ID(), rules, err)
		}
		eff := until(t, ctx, what, 30*time.Second, effect)
		heal := timed(t, "heal", func() error { _, err := n.Heal(ctx); return err })
		if rules, err := n.Rules(ctx); err != nil || len(rules) != 0 {
			t.Errorf("rules after heal: %q, %v", rules, err)
		}
		back := until(t, ctx, "serving again", 30*time.Second, func() bool { return !notServing(ctx, n)() })
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("MEASURE isolate %s: rules listed in %s, effect %s later; heal (flushed, listed empty) in %s, serving %s later",
			what, rulesIn.Round(time.Millisecond), eff.Round(time.Millisecond), heal.Round(time.Millisecond), back.Round(time.Millisecond))
	}
	t.Run("isolate a follower", func(t *testing.T) {
		_, fs := roles(t, ctx, c)
		isolate(t, fs[0], "follower stops serving", notServing(ctx, fs[0]))
	})
	t.Run("isolate the leader", func(t *testing.T) {
		l, _ := roles(t, ctx, c)
		isolate(t, l, "leader replaced", func() bool { return newLeaderOther(ctx, c, l)() && notServing(ctx, l)() })
	})

	t.Run("restore undoes faults left behind", func(t *testing.T) {
		l, fs := roles(t, ctx, c)
		if _, err := fs[0].Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := fs[1].Isolate(ctx, []cluster.Node{l}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		did, err := c.Restore(ctx)
		if err != nil || len(did) != 3 {
			t.Errorf("restore: %q, %v; want 3 things undone", did, err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		if did, err := c.Restore(ctx); err != nil || len(did) != 0 {
			t.Errorf("restore of a whole ensemble: %q, %v; want nothing to do", did, err)
		}
	})

	t.Run("data survives every server's restart", func(t *testing.T) {
		for _, n := range c.nodes {
			if _, err := n.Kill(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		conn := connect(t, c.ConnectString())
		defer conn.Close()
		if b, _, err := conn.Get("/zkchaos-docker"); err != nil || string(b) != "survives" {
			t.Errorf("znode after all servers restarted: %q, %v", b, err)
		}
	})

	t.Run("close removes containers and network, keeps logs and data", func(t *testing.T) {
		bridge := c.Network().Bridge
		if err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if rs, err := runs(ctx, c.cli, run); err != nil || len(rs) != 0 {
			t.Errorf("after Close: %+v, %v", rs, err)
		}
		if err := exec.Command("ip", "link", "show", bridge).Run(); err == nil {
			t.Errorf("bridge %s still there after Close", bridge)
		}
		for _, n := range c.nodes {
			b, err := os.ReadFile(n.LogPath())
			if err != nil || !strings.Contains(string(b), "QuorumPeer") {
				t.Errorf("log %s: %d bytes, %v; want the server's log", n.LogPath(), len(b), err)
			}
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("n%d", n.ID()), "datalog", "version-2")); err != nil {
				t.Errorf("node %d transaction log: %v", n.ID(), err)
			}
		}
	})
}

// TestCleanupAfterControllerCrash: a controller SIGKILLed while a server
// is paused and another isolated leaves containers and a network; Runs
// shows them with the dead controller's PID, and Cleanup by the run's
// label removes them all and keeps their logs.
func TestCleanupAfterControllerCrash(t *testing.T) {
	tag := needImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, dir := newRunID(), t.TempDir()
	t.Cleanup(func() { _, _ = Cleanup(context.Background(), run) })
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{run, dir, tag}, ","))
	cmd.Stderr = t.Output()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "faulted" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("controller said %q, %v", line, err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	rs, err := Runs(ctx)
	var mine *Run
	for i := range rs {
		if rs[i].ID == run {
			mine = &rs[i]
		}
	}
	if err != nil || mine == nil || len(mine.Containers) != 3 || len(mine.Networks) != 1 || mine.Owners.Controller.PID != os.Getpid() {
		t.Fatalf("leftovers of run %s: %+v, %v; want 3 containers and 1 network labelled with controller %d", run, mine, err, os.Getpid())
	}
	start := time.Now()
	did, err := Cleanup(ctx, run)
	took := time.Since(start)
	if err != nil || len(did) != 4 {
		t.Errorf("cleanup: %q, %v; want 3 containers and a network removed", did, err)
	}
	t.Logf("MEASURE cleanup of a crashed run (3 containers, one paused, one isolated; network): %s", took.Round(time.Millisecond))
	if rs, err := runs(ctx, mustConnect(t, ctx), run); err != nil || len(rs) != 0 {
		t.Errorf("after cleanup: %+v, %v", rs, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "n1", "zk.log")); err != nil || !strings.Contains(string(b), "QuorumPeer") {
		t.Errorf("log of the crashed run's n1 not kept: %v", err)
	}
	if did, err := Cleanup(ctx, run); err != nil || len(did) != 0 {
		t.Errorf("second cleanup: %q, %v; want nothing", did, err)
	}
}

func mustConnect(t *testing.T, ctx context.Context) *testcontainers.DockerClient {
	t.Helper()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// crashingController is the child of TestCleanupAfterControllerCrash.
func crashingController(spec string) int {
	parts := strings.Split(spec, ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "controller:", err); return 1 }
	// The labels name the test process as the controller, which stays
	// alive: a `chaos cleanup` of another test package, which removes runs
	// whose controller is dead, must not take this run before the test's
	// own Cleanup does.
	c, err := New(ctx, Config{Nodes: 3, RunID: parts[0], Dir: parts[1], Image: parts[2], Owners: proc.ControlledBy(os.Getppid())})
	if err != nil {
		return fail(err)
	}
	if err := c.Start(ctx); err != nil {
		return fail(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		return fail(err)
	}
	if _, err := c.Node(1).Pause(ctx); err != nil {
		return fail(err)
	}
	if _, err := c.Node(2).Isolate(ctx, []cluster.Node{c.Node(3)}); err != nil {
		return fail(err)
	}
	fmt.Println("faulted")
	<-ctx.Done() // SIGKILLed before
	return 1
}

// hostPID is the host PID of a node's JVM as the backend reports it (0
// when it does not run), which the tests check against the host's /proc.
func hostPID(t *testing.T, ctx context.Context, n *Node) int {
	t.Helper()
	p, err := n.Process(ctx)
	if err != nil {
		t.Fatalf("process of node %d: %v", n.ID(), err)
	}
	return p.PID
}
