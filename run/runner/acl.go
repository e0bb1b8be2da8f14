package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/client/recipes"
	"github.com/zkchaos/zkchaos/internal/setting"
	"github.com/zkchaos/zkchaos/resource/register"
	"github.com/zkchaos/zkchaos/workloads"
)

// The lock parent must exist and be ACL-protected
// (docs/background.md#the-queue-lock-recipe), so
// that an ordinary client can neither delete it, forge a lock node, nor
// reset the sequence by re-creating it. With --acl on the controller
// creates the lock root (with its parents) and every key node before any
// worker starts, each with the ACL recipes.Auth.ACL gives: all rights for
// the run's digest identity, read for everyone. Every worker authenticates
// with that identity, so the lock nodes it creates carry the same ACL.
//
// The credentials are made per run, held in the controller's memory, and
// handed to the processes that need them through their environment only:
// never a flag (ps shows command lines to every user), never test.json,
// never a log line.

// zkUser is the digest identity of a run.
const zkUser = "zkchaos"

// protectTimeout bounds the creation of the protected tree.
const protectTimeout = 30 * time.Second

// runSecrets are one run's credentials.
type runSecrets struct {
	// zk is the ZooKeeper credential; the zero Auth with --acl off.
	zk recipes.Auth
	// register is what every call to the register must present.
	register string
}

// newRunSecrets draws fresh random credentials; with acl false there is
// no ZooKeeper credential (world-writable nodes, as before --acl).
func newRunSecrets(acl bool) (runSecrets, error) {
	var s runSecrets
	var err error
	if s.register, err = randomSecret(); err != nil {
		return s, err
	}
	if !acl {
		return s, nil
	}
	pw, err := randomSecret()
	if err != nil {
		return s, err
	}
	s.zk, err = recipes.NewDigestAuth(zkUser, pw)
	return s, err
}

// randomSecret is 128 random bits in hex (no ':', which digest splits on).
func randomSecret() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draw a secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// registerEnv is base plus what `chaos register` needs.
func (s runSecrets) registerEnv(base []string) []string {
	return append(slices.Clone(base), register.SecretEnv+"="+s.register)
}

// workerEnv is base plus what a worker needs: the register's secret and,
// with --acl on, the ZooKeeper credential.
func (s runSecrets) workerEnv(base []string) []string {
	env := s.registerEnv(base)
	if s.zk.Enabled() {
		env = append(env, s.zk.Env())
	}
	return env
}

// prepareNodes creates the workload's znodes (parents first) before any
// worker starts, with their initial data: under --acl on with auth's ACL,
// read back from the server (a tree that is not protected as intended
// stops the run), and with every right for everyone under --acl off. A
// node that already exists gets the ACL set. "/" itself is ZooKeeper's and
// is left alone; it only governs deleting the topmost created node, which
// can never be empty while the nodes beneath it are protected.
func prepareNodes(ctx context.Context, connect string, nodes []workloads.Node, auth recipes.Auth, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, protectTimeout)
	defer cancel()
	conn, _, err := zk.Connect(strings.Split(connect, ","), 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		return fmt.Errorf("prepare znodes: connect: %w", err)
	}
	defer conn.Close()
	// go-zookeeper takes no context: closing the connection is what ends
	// every call still waiting when ctx does.
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	if auth.Enabled() {
		if err := auth.Authenticate(ctx, conn); err != nil {
			return fmt.Errorf("prepare znodes: %w", err)
		}
	}
	for _, n := range nodes {
		if err := prepareNode(conn, n, auth); err != nil {
			return fmt.Errorf("prepare znodes: %w", err)
		}
	}
	acl := "world:anyone:cdrwa (" + setting.Name("ACL") + " off)"
	if auth.Enabled() {
		acl = "digest:" + auth.User() + ":cdrwa, world:anyone:r"
	}
	log.Info("workload znodes ready", "nodes", len(nodes), "acl", acl)
	return nil
}

// prepareNode creates n with auth's ACL (or sets it on an existing n) and
// checks the ACL the server reports; without auth, n is world-writable.
func prepareNode(conn *zk.Conn, n workloads.Node, auth recipes.Auth) error {
	if !auth.Enabled() {
		_, err := conn.Create(n.Path, n.Data, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", n.Path, err)
		}
		return nil
	}
	_, err := conn.Create(n.Path, n.Data, 0, auth.ACL())
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.SetACL(n.Path, auth.ACL(), -1)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", n.Path, err)
	}
	got, _, err := conn.GetACL(n.Path)
	if err != nil {
		return fmt.Errorf("read back the ACL of %s: %w", n.Path, err)
	}
	if want := auth.StoredACL(); !slices.Equal(got, want) {
		return fmt.Errorf("%s has ACL %v, want %d entries (digest all, world read)", n.Path, aclText(got), len(want))
	}
	return nil
}

// aclText shows an ACL without the digest (a hash of the password).
func aclText(acl []zk.ACL) string {
	var parts []string
	for _, a := range acl {
		id := a.ID
		if a.Scheme == recipes.SchemeDigest {
			id, _, _ = strings.Cut(id, ":")
		}
		parts = append(parts, fmt.Sprintf("%s:%s:%d", a.Scheme, id, a.Perms))
	}
	return strings.Join(parts, ", ")
}

// zkQuiet drops go-zookeeper's connection chatter.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// LockRoot is the persistent parent of the run's locks, for the
// rogue-client fault (nemesis.LockTree).
func (f *fleet) LockRoot() string { return f.cfg.lockRoot() }
