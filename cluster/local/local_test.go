package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/host/netns"
	"github.com/zkchaos/zkchaos/host/proc"
)

func skipUnlessZK(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no ZooKeeper: %v", err)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type zkLog struct{ t *testing.T }

func (l zkLog) Printf(f string, a ...any) { l.t.Logf("zk client: "+f, a...) }

func TestLoopbackEnsemble(t *testing.T) {
	skipUnlessZK(t)
	exercise(t, nil)
}

func TestNetnsEnsemble(t *testing.T) {
	skipUnlessZK(t)
	if err := netns.Available(); err != nil {
		t.Skipf("netns mode unavailable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nw, err := netns.Create(ctx, "test-local-"+fmt.Sprint(os.Getpid()), proc.Self(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nw.Close(context.Background()); err != nil {
			t.Errorf("close network: %v", err)
		}
	})
	exercise(t, nw)
	// Cluster.Close removed its hosts but left the network to its owner.
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if p := fmt.Sprintf("zkc%d-", nw.Slot); strings.Contains(string(out), p) {
		t.Errorf("namespaces %s* left after cluster Close:\n%s", p, out)
	}
	if err := exec.Command("ip", "link", "show", nw.Bridge).Run(); err != nil {
		t.Errorf("bridge %s gone after cluster Close (the network is not the cluster's): %v", nw.Bridge, err)
	}
}

func exercise(t *testing.T, nw *netns.Network) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run := fmt.Sprintf("test-%s-%d", t.Name(), os.Getpid())
	c, err := New(ctx, Config{
		Nodes:  3,
		Dir:    t.TempDir(),
		Env:    proc.Env(run, proc.Self()),
		Logger: testLogger(t),
		// Network nil: loopback mode.
		Network: nw,
	})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close cluster: %v", err)
		}
		for _, n := range c.nodes {
			pids = append(pids, n.PID())
		}
		proc.KillAll(nonzero(pids)) // only if Close failed to
	})

	start := time.Now()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitReady(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASURE %s: start-to-ready %s", t.Name(), time.Since(start).Round(time.Millisecond))
	for _, n := range c.nodes {
		pids = append(pids, n.PID())
		// Own process group, and findable by the run tag alone.
		if g, err := syscall.Getpgid(n.PID()); err != nil || g != n.PID() {
			t.Errorf("node %d pid %d in process group %d (%v), want its own", n.ID(), n.PID(), g, err)
		}
	}
	tagged, err := proc.FindTagged(run)
	if err != nil || len(tagged) != 3 {
		t.Errorf("FindTagged(%q) = %v, %v; want the 3 JVMs", run, tagged, err)
	}

	// A client can write and read.
	conn, _, err := zk.Connect(strings.Split(c.ConnectString(), ","), 4*time.Second, zk.WithLogger(zkLog{t}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/zkchaos-test", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create znode: %v", err)
	}
	data, _, err := conn.Get("/zkchaos-test")
	if err != nil || string(data) != "hello" {
		t.Fatalf("get znode: %q, %v", data, err)
	}
	conn.Close()
	checkFourLetterWords(ctx, t, c)

	// Pause shows in the kernel's view, resume undoes it.
	leader, follower := roles(ctx, t, c)
	if _, err := follower.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := proc.State(follower.PID()); err != nil || s != 'T' {
		t.Errorf("paused node %d: state %c, %v; want T", follower.ID(), s, err)
	}
	if _, err := follower.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := proc.State(follower.PID()); s == 'T' {
		t.Errorf("resumed node %d still stopped", follower.ID())
	}

	// Kill and restart the leader: the ensemble comes back with its data.
	old := leader.PID()
	if _, err := leader.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if leader.PID() != 0 || proc.Alive(old) {
		t.Fatalf("leader pid %d still alive after Kill", old)
	}
	if _, err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, leader.PID())
	restart := time.Now()
	if err := waitReady(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASURE %s: leader restart-to-ready %s", t.Name(), time.Since(restart).Round(time.Millisecond))
	newLeader, _ := roles(ctx, t, c)
	t.Logf("leader was node %d, now node %d", leader.ID(), newLeader.ID())

	// Close leaves no JVM behind.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range nonzero(pids) {
		if proc.Alive(p) {
			t.Errorf("pid %d alive after Close", p)
		}
	}
	if b, err := os.ReadFile(leader.LogPath()); err != nil || !strings.Contains(string(b), "zkchaos: starting node") {
		t.Errorf("log %s: %v", leader.LogPath(), err)
	}
}

// checkFourLetterWords: the servers answer the words the harness sends
// and refuse every other (the whitelist, not "*").
func checkFourLetterWords(ctx context.Context, t *testing.T, c *Cluster) {
	t.Helper()
	addr := c.nodes[0].ClientAddr()
	for _, w := range cluster.FourLetterWords {
		out, err := cluster.FourLetter(ctx, addr, w)
		if err != nil || strings.Contains(out, "not in the whitelist") || out == "" {
			t.Errorf("%s on %s: %q, %v; want an answer", w, addr, out, err)
		}
	}
	for _, w := range []string{"dump", "envi", "conf", "wchp", "stat", "ruok"} {
		out, _ := cluster.FourLetter(ctx, addr, w)
		if !strings.Contains(out, "not in the whitelist") {
			t.Errorf("%s on %s answered %q; want it refused (not in the whitelist)", w, addr, firstLine(out))
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func waitReady(ctx context.Context, c *Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	return c.WaitReady(ctx)
}

func roles(ctx context.Context, t *testing.T, c *Cluster) (leader, follower *Node) {
	t.Helper()
	for _, n := range c.nodes {
		st, err := n.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch st.Mode {
		case "leader":
			leader = n
		case "follower":
			follower = n
		}
	}
	if leader == nil || follower == nil {
		t.Fatal("no leader or no follower")
	}
	return leader, follower
}

func nonzero(ps []int) []int {
	var out []int
	for _, p := range ps {
		if p != 0 {
			out = append(out, p)
		}
	}
	return out
}
