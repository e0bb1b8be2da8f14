package monitor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/internal/testkit/chaostest"
	"github.com/zkchaos/zkchaos/observe/monitor"
)

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// TestMonitorOnARealEnsemble runs the monitor against three real servers
// (loopback) while a client holds two lock nodes and one server is
// paused: the samples come at the interval and at a step, show the nodes
// with their sequence numbers and owner, the owner's session as cons
// lists it, and the paused server as an error of the samples it spoiled,
// never as a failure.
func TestMonitorOnARealEnsemble(t *testing.T) {
	chaostest.NeedEnsemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := local.New(ctx, local.Config{Nodes: 3, Dir: t.TempDir(), Env: proc.Env(fmt.Sprintf("test-monitor-%d", os.Getpid()), proc.Self())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect(strings.Split(c.ConnectString(), ","), 4*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, p := range []string{"/locks", "/locks/a"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := conn.Create("/locks/a/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	owner := monitor.SessionHex(conn.SessionID())

	t0 := time.Now()
	path := filepath.Join(t.TempDir(), "monitor.jsonl")
	const every = 250 * time.Millisecond
	m, err := monitor.Start(ctx, monitor.Config{Nodes: c.Nodes(), Dirs: []string{"/locks/a", "/locks/missing"}, Interval: every,
		SessionTimeout: 4 * time.Second, Clock: func() int64 { return int64(time.Since(t0)) }, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	// A follower: pausing the leader would stop every server serving
	// until a new one is elected, which is not what this test is about.
	var paused cluster.Node
	for _, n := range c.Nodes() {
		if st, err := n.Status(ctx); err == nil && st.Mode == "follower" {
			paused = n
			break
		}
	}
	if paused == nil {
		t.Fatal("no follower")
	}
	if _, err := paused.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	stepAt := time.Since(t0)
	m.Step(fmt.Sprintf("pause ok n%d", paused.ID()), 7)
	time.Sleep(1500 * time.Millisecond)
	if _, err := paused.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	f, err := monitor.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			for _, s := range f.Samples {
				t.Logf("sample %d at %s took %s %s: dirs %+v servers %+v", s.Seq, time.Duration(s.TimeNS), time.Duration(s.TookNS), s.Why, s.Dirs, s.Servers)
			}
		}
	}()
	checkCadence(t, f.Samples, every, fmt.Sprintf("pause ok n%d", paused.ID()), stepAt)
	checkLockDir(t, f.Samples, owner)
	checkPausedServer(t, f.Samples, paused.ID())
}

// checkCadence: interval samples every interval, one sample for the step.
func checkCadence(t *testing.T, ss []monitor.Sample, every time.Duration, step string, stepAt time.Duration) {
	t.Helper()
	var steps, intervals []monitor.Sample
	for _, s := range ss {
		if s.Why == monitor.WhyNemesis {
			steps = append(steps, s)
		} else {
			intervals = append(intervals, s)
		}
	}
	if len(steps) != 1 || steps[0].Step != step || steps[0].HistoryIndex == nil || *steps[0].HistoryIndex != 7 {
		t.Errorf("step samples %+v, want one for %q (history index 7)", steps, step)
	} else if late := time.Duration(steps[0].TimeNS) - stepAt; late > monitor.Bound(every)+100*time.Millisecond {
		t.Errorf("the step's sample started %s after the step; want at most the sample in progress (%s)", late, monitor.Bound(every))
	}
	// 3.5 s at 250 ms: about 14 interval samples.
	if len(intervals) < 11 || len(intervals) > 16 {
		t.Errorf("%d interval samples in 3.5 s at %s", len(intervals), every)
	}
	for i := 1; i < len(intervals); i++ {
		gap := time.Duration(intervals[i].TimeNS - intervals[i-1].TimeNS)
		if gap < every/2 || gap > 2*every+monitor.Bound(every) {
			t.Errorf("interval samples %d and %d are %s apart (interval %s)", intervals[i-1].Seq, intervals[i].Seq, gap, every)
		}
	}
	for _, s := range ss {
		if time.Duration(s.TookNS) > monitor.Bound(every)+100*time.Millisecond {
			t.Errorf("sample %d took %s, over its bound %s", s.Seq, time.Duration(s.TookNS), monitor.Bound(every))
		}
	}
}

// checkLockDir: the directory as zkCli shows it, the owner's session
// listed by cons; a missing directory is the sample's error.
func checkLockDir(t *testing.T, ss []monitor.Sample, owner string) {
	t.Helper()
	last := ss[len(ss)-1]
	a, missing := last.Dirs[0], last.Dirs[1]
	if a.Error != "" || len(a.Children) != 2 || a.NumChildren != 2 || a.Cversion != 2 {
		t.Fatalf("/locks/a in the last sample: %+v; want 2 children, cversion 2", a)
	}
	for i, ch := range a.Children {
		if ch.Seq != int64(i) || ch.Owner != owner || !strings.HasPrefix(ch.Name, "lock-") || ch.Czxid == 0 {
			t.Errorf("child %d: %+v; want seq %d owned by %s", i, ch, i, owner)
		}
	}
	if listing, _ := last.Liveness(owner); len(listing) != 1 {
		t.Errorf("the owner's session %s listed by %v; want exactly one server", owner, listing)
	}
	if !strings.Contains(missing.Error, "node does not exist") {
		t.Errorf("/locks/missing: error %q, want no node", missing.Error)
	}
	if last.Session == "" || last.Session == owner {
		t.Errorf("the monitor's own session %q", last.Session)
	}
	for _, sv := range last.Servers {
		if sv.Mntr == nil || sv.ConsError != "" || sv.Mntr.Znodes < 4 {
			t.Errorf("server %d after the resume: %+v", sv.ID, sv)
		}
	}
}

// checkPausedServer: the paused server's words are errors of the samples
// taken while it was stopped, and the others still answered.
func checkPausedServer(t *testing.T, ss []monitor.Sample, id int) {
	t.Helper()
	spoiled, othersOK := 0, true
	for _, s := range ss {
		for _, sv := range s.Servers {
			if sv.ID == id && sv.MntrError != "" && sv.ConsError != "" {
				spoiled++
			}
			if sv.ID != id && s.Why == monitor.WhyNemesis && sv.Mntr == nil {
				othersOK = false
			}
		}
	}
	if spoiled < 3 || !othersOK {
		t.Errorf("%d samples saw the paused server %d as an error (want several); others answered during the pause: %v", spoiled, id, othersOK)
	}
}
