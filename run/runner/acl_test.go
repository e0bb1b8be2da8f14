package runner

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/cluster/local"
	"github.com/zkchaos/zkchaos/host/proc"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/workloads"
)

func TestRunSecrets(t *testing.T) {
	on, err := newRunSecrets(true)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := newRunSecrets(true)
	if on.register == again.register || on.zk.Env() == again.zk.Env() || len(on.register) != 32 {
		t.Errorf("secrets are not fresh random per run: %q %q", on.register, again.register)
	}
	base := []string{"ZKCHAOS_RUN=x"}
	env := on.workerEnv(base)
	if !slices.Contains(env, register.SecretEnv+"="+on.register) || !slices.Contains(env, on.zk.Env()) || env[0] != base[0] {
		t.Errorf("worker env lacks a credential: %d entries", len(env))
	}
	if reg := on.registerEnv(base); slices.Contains(reg, on.zk.Env()) {
		t.Errorf("the register is given the ZooKeeper credential, which it does not need")
	}
	if len(base) != 1 {
		t.Errorf("the base environment was changed")
	}
	off, err := newRunSecrets(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range off.workerEnv(nil) {
		if strings.HasPrefix(e, recipes.AuthEnv+"=") {
			t.Errorf("--acl off hands out a ZooKeeper credential")
		}
	}
}

// TestProtectLockTree creates the tree as a run with --acl on does, on a
// real ZooKeeper, then tries what the protection must forbid
// (docs/background.md#the-queue-lock-recipe) as an anonymous client (each
// must be refused NoAuth) and what a worker does as an authenticated one
// (each must work, and the lock node it creates must keep the protection).
func TestProtectLockTree(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	if err := local.Available(); err != nil {
		t.Skipf("no ZooKeeper: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := local.Launch(ctx, local.Config{Nodes: 1, Dir: t.TempDir(), Env: proc.Env("test-runner-acl", proc.Self())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	sec, err := newRunSecrets(true)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	root := "/locks/inventory"
	anon := connect(t, c.ConnectString())
	// One parent is there already, world-writable: it must be protected too.
	if _, err := anon.Create("/locks", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	wl := &workloads.Lock{Keys: []string{"SKU-1", "SKU-2"}, Root: root}
	if err := prepareNodes(ctx, c.ConnectString(), wl.Nodes(), sec.zk, log); err != nil {
		t.Fatal(err)
	}

	admin := connect(t, c.ConnectString())
	if err := sec.zk.Authenticate(ctx, admin); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/locks", root, root + "/SKU-1", root + "/SKU-2"} {
		acl, _, err := admin.GetACL(p)
		if err != nil || !slices.Equal(acl, sec.zk.StoredACL()) {
			t.Errorf("ACL of %s: %v, %v; want digest all + world read", p, aclText(acl), err)
		}
		// The server hides the digest (a hash of the password) from
		// whoever lacks the admin right.
		if acl, _, err := anon.GetACL(p); err != nil || slices.Equal(acl, sec.zk.StoredACL()) {
			t.Errorf("anonymous client reads the digest of %s: %v", p, err)
		}
	}
	if _, _, err := anon.Children(root + "/SKU-1"); err != nil {
		t.Errorf("world may read (list a queue): %v", err)
	}
	forbidden := map[string]func() error{
		"delete the lock root":      func() error { return anon.Delete(root, -1) },
		"delete a key node":         func() error { return anon.Delete(root+"/SKU-1", -1) },
		"create a key node":         func() error { _, err := anon.Create(root+"/SKU-9", nil, 0, zk.WorldACL(zk.PermAll)); return err },
		"forge a lock node":         func() error { return forge(anon, root+"/SKU-1") },
		"change a key node's ACL":   func() error { _, err := anon.SetACL(root+"/SKU-1", zk.WorldACL(zk.PermAll), -1); return err },
		"write the key node's data": func() error { _, err := anon.Set(root+"/SKU-1", []byte("x"), -1); return err },
	}
	for what, f := range forbidden {
		if err := f(); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous client may %s: %v, want NoAuth", what, err)
		}
	}

	// A worker with the run's credential takes and gives back the lock;
	// its lock node carries the protection too.
	lock, err := recipes.NewSeed(recipes.Config{Servers: []string{c.ConnectString()}, SessionTimeout: 4 * time.Second,
		Root: root, Auth: sec.zk, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	g, err := lock.Acquire(ctx, "SKU-1", 10*time.Second)
	if err != nil {
		t.Fatalf("authenticated acquire: %v", err)
	}
	if acl, _, err := admin.GetACL(g.Node); err != nil || !slices.Equal(acl, sec.zk.StoredACL()) {
		t.Errorf("lock node %s has ACL %s (%v); want digest all + world read", g.Node, aclText(acl), err)
	}
	if err := anon.Delete(g.Node, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("anonymous delete of a held lock node: %v, want NoAuth", err)
	}
	if err := lock.Release(ctx, "SKU-1"); err != nil {
		t.Errorf("authenticated release: %v", err)
	}

	// A worker without the credential cannot even queue.
	stranger, err := recipes.NewSeed(recipes.Config{Servers: []string{c.ConnectString()}, SessionTimeout: 4 * time.Second,
		Root: root, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.Acquire(ctx, "SKU-2", 3*time.Second); err == nil || !strings.Contains(err.Error(), "not authenticated") {
		t.Errorf("acquire without the credential: %v, want refused (not authenticated)", err)
	}
}

// forge creates an ephemeral sequential node in a key's queue, as a lock
// node of the recipes' naming.
func forge(conn *zk.Conn, keyNode string) error {
	_, err := conn.Create(keyNode+"/_c_00000000-0000-0000-0000-000000000000-lock-", nil,
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	return err
}

func connect(t *testing.T, addrs string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(strings.Split(addrs, ","), 4*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}
