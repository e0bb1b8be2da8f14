package nemesis

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/history"
)

// rogueTargets is the controller's view for the test: the holders it is
// told about, and the lock root.
type rogueTargets struct {
	root string
	mu   sync.Mutex
	hs   []Holder
}

func (r *rogueTargets) Holders() []Holder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Holder(nil), r.hs...)
}

func (r *rogueTargets) add(h Holder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hs = append(r.hs, h)
}

func (r *rogueTargets) LockRoot() string { return r.root }

// TestRogueClient runs rogue-client against a real one-node ensemble, a
// holder and a waiter (the seed recipe), with the lock tree protected as
// --acl on makes it and world-writable as --acl off leaves it. With the
// ACL every attempt is refused and the holder keeps its lock; without it
// the forgery gives the waiter the lock while the holder's release still
// answers ok, the sequence is reset, and the end removes nothing left.
func TestRogueClient(t *testing.T) {
	ctx, c := realEnsemble(t, 1, "test-rogue", 120*time.Second)
	auth, err := recipes.NewDigestAuth("zkchaos", "test-password")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("acl-on", func(t *testing.T) { rogueScenario(ctx, t, c, "/on/inventory", auth) })
	t.Run("acl-off", func(t *testing.T) { rogueScenario(ctx, t, c, "/off/inventory", recipes.Auth{}) })
}

func rogueScenario(ctx context.Context, t *testing.T, c *local.Cluster, root string, auth recipes.Auth) {
	addr := c.ConnectString()
	keyNode := root + "/SKU-1"
	admin := adminConn(ctx, t, addr, auth)
	for _, p := range []string{path.Dir(root), root, keyNode} {
		if _, err := admin.Create(p, nil, 0, auth.ACL()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	_, keySt, err := admin.Exists(keyNode)
	if err != nil {
		t.Fatal(err)
	}

	newLock := func() *recipes.Seed {
		l, err := recipes.NewSeed(recipes.Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second,
			Root: root, Auth: auth, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	holder, waiter := newLock(), newLock()
	g, err := holder.Acquire(ctx, "SKU-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	targets := &rogueTargets{root: root}
	targets.add(Holder{Process: 1, PID: 1001, Key: "SKU-1", Token: g.Token})
	type result struct {
		g   recipes.Grant
		err error
	}
	waited := make(chan result, 1)
	go func() {
		wg, err := waiter.Acquire(ctx, "SKU-1", 30*time.Second)
		if err == nil {
			targets.add(Holder{Process: 2, PID: 1002, Key: "SKU-1", Token: wg.Token})
		}
		waited <- result{wg, err}
	}()
	waitChildren(ctx, t, admin, keyNode, 2)

	// Without the ACL the rogue puts a node back at the holder's path;
	// the holder's release must then find it and answer ok.
	released := make(chan error, 1)
	go func() {
		if auth.Enabled() {
			return
		}
		for ctx.Err() == nil {
			if ok, _, _ := admin.Exists(g.Node); ok && len(targets.Holders()) == 2 {
				released <- holder.Release(ctx, "SKU-1")
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	env := &Env{Cluster: c, Targets: targets, Rand: rand.New(rand.NewPCG(1, 2)), Logger: slog.New(slog.DiscardHandler)}
	eff, err := rogueClient{}.Inject(ctx, env)
	if err != nil || eff == nil {
		t.Fatalf("inject: %v (effect %v)", err, eff)
	}
	v := eff.Value
	t.Logf("rogue: %s\n  %s", v.Target, v.Detail)
	if v.TargetProcess == nil || *v.TargetProcess != 1 || v.PID != 1001 || !strings.Contains(v.Target, g.Node) {
		t.Errorf("target: process %v pid %d %q; want the holder, process 1, its node %s", v.TargetProcess, v.PID, v.Target, g.Node)
	}
	end, err := eff.Undo(ctx)
	if err != nil {
		t.Fatalf("end: %v", err)
	}
	t.Logf("rogue-end: %s", end.Detail)
	if end.TargetProcess == nil || *end.TargetProcess != 1 {
		t.Errorf("end: target process %v, want 1", end.TargetProcess)
	}

	_, after, err := admin.Exists(keyNode)
	if err != nil {
		t.Fatal(err)
	}
	if auth.Enabled() {
		if !strings.HasPrefix(v.Detail, "anonymous client, 7 attempts: 7 refused, 0 done, 0 failed, 0 unknown;") {
			t.Errorf("with the ACL every attempt must be refused: %s", v.Detail)
		}
		if after.Czxid != keySt.Czxid {
			t.Errorf("key node re-created despite the ACL")
		}
		if ok, _, _ := admin.Exists(g.Node); !ok {
			t.Errorf("the holder's node %s is gone despite the ACL", g.Node)
		}
		if _, held := holder.Held("SKU-1"); !held {
			t.Errorf("the holder lost its lock")
		}
		if !strings.Contains(end.Detail, "no forged node") || !strings.Contains(end.Detail, "intact") {
			t.Errorf("end: %s; want nothing forged, key node intact", end.Detail)
		}
		if err := holder.Release(ctx, "SKU-1"); err != nil {
			t.Errorf("release after the refused attacks: %v", err)
		}
		if r := <-waited; r.err != nil {
			t.Errorf("waiter after the holder's release: %v", r.err)
		}
		return
	}
	for _, want := range []string{"forge: delete the holder's lock node " + g.Node + ": done, process 2 granted SKU-1",
		"forge: create a node at the holder's path " + g.Node + ": done, deleted",
		"reset: delete the key node " + keyNode + ": done", "reset: create the key node again " + keyNode + ": done"} {
		if !strings.Contains(v.Detail, want) {
			t.Errorf("without the ACL the record lacks %q:\n%s", want, v.Detail)
		}
	}
	select {
	case err := <-released:
		if err != nil {
			t.Errorf("the holder's release after the forgery: %v, want ok (that is the damage)", err)
		}
	default:
		t.Errorf("the holder never released")
	}
	if r := <-waited; r.err != nil {
		t.Errorf("the waiter was not granted the lock: %v", r.err)
	}
	if after.Czxid == keySt.Czxid {
		t.Errorf("key node not re-created by the reset (czxid 0x%x, was 0x%x)", after.Czxid, keySt.Czxid)
	}
	if !strings.Contains(end.Detail, "re-created") {
		t.Errorf("end does not say the key node was re-created: %s", end.Detail)
	}
}

// adminConn is a client with auth, as the controller creating the tree.
func adminConn(ctx context.Context, t *testing.T, addr string, auth recipes.Auth) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(zkDebugLog{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if err := auth.Authenticate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitChildren waits until node has n children.
func waitChildren(ctx context.Context, t *testing.T, conn *zk.Conn, node string, n int) {
	t.Helper()
	for ctx.Err() == nil {
		ch, _, err := conn.Children(node)
		if err == nil && len(ch) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never had %d children", node, n)
}

// TestRogueClientRegistered: the fault is known by name and records its
// start and end with the verbs the checkers and report know.
func TestRogueClientRegistered(t *testing.T) {
	if err := ValidateList([]string{"rogue-client"}); err != nil {
		t.Fatal(err)
	}
	if err := Usable("rogue-client", noServerFaults); err != nil {
		t.Errorf("rogue-client needs nothing of the backend: it is a client of the servers' own addresses (%v)", err)
	}
	if err := Usable("rogue-client", loopbackRun); err != nil {
		t.Errorf("rogue-client needs no namespaces (%v)", err)
	}
	if start, stop := (rogueClient{}).Verbs(); start != history.FRogue || stop != history.FRogueEnd {
		t.Errorf("verbs %s/%s, want %s/%s", start, stop, history.FRogue, history.FRogueEnd)
	}
}
