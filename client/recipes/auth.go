package recipes

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// AuthEnv is the environment variable through which a worker receives
// its ZooKeeper credential, "digest:USER:PASSWORD". The environment, not a
// flag: a command line is world-readable in ps and /proc, and the
// controller records its own in test.json.
const AuthEnv = "ZKCHAOS_ZK_AUTH"

// SchemeDigest is the only authentication scheme the harness uses: it
// needs nothing on the servers beyond ZooKeeper's default providers.
const SchemeDigest = "digest"

// Auth is a ZooKeeper credential. The zero value is no credential: the
// client stays anonymous and creates world-writable nodes, as a run with
// --acl off does. Its String and LogValue never show the password, so an
// Auth that ends up in a log line or an error leaks nothing.
type Auth struct {
	user, password string
}

// NewDigestAuth is the digest credential user:password. Neither may
// contain a colon, which ZooKeeper uses to split them.
func NewDigestAuth(user, password string) (Auth, error) {
	if user == "" || password == "" || strings.Contains(user, ":") || strings.Contains(password, ":") {
		return Auth{}, fmt.Errorf("digest credential needs a user and a password without ':'")
	}
	return Auth{user: user, password: password}, nil
}

// ParseAuth reads the value of AuthEnv; "" is no credential. The error
// never repeats the value, which holds the password.
func ParseAuth(s string) (Auth, error) {
	if s == "" {
		return Auth{}, nil
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme != SchemeDigest {
		return Auth{}, fmt.Errorf("%s: want %s:USER:PASSWORD", AuthEnv, SchemeDigest)
	}
	user, pw, ok := strings.Cut(rest, ":")
	if !ok {
		return Auth{}, fmt.Errorf("%s: want %s:USER:PASSWORD", AuthEnv, SchemeDigest)
	}
	a, err := NewDigestAuth(user, pw)
	if err != nil {
		return Auth{}, fmt.Errorf("%s: %w", AuthEnv, err)
	}
	return a, nil
}

// Enabled reports whether a is a credential rather than anonymity.
func (a Auth) Enabled() bool { return a.user != "" }

// User is the credential's user name ("" without one).
func (a Auth) User() string { return a.user }

// Env is the AuthEnv=... entry that hands a to a child process.
func (a Auth) Env() string {
	return AuthEnv + "=" + SchemeDigest + ":" + a.user + ":" + a.password
}

// String shows the scheme and user only.
func (a Auth) String() string {
	if !a.Enabled() {
		return "none"
	}
	return SchemeDigest + ":" + a.user + ":<redacted>"
}

// GoString keeps %#v from printing the password too.
func (a Auth) GoString() string { return "recipes.Auth(" + a.String() + ")" }

// LogValue implements slog.LogValuer.
func (a Auth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// ACL is the ACL of every node a client with credential a creates: with a
// credential, all rights for the authenticated creator (ZooKeeper's
// CREATOR_ALL_ACL, the "auth" scheme) and read for everyone, so nobody
// without the credential can delete, forge or re-create a lock node, yet
// an operator may still list a queue with zkCli, as the runbook does
// (docs/background.md#what-the-runbook-asks); without one,
// today's world-writable ACL.
func (a Auth) ACL() []zk.ACL {
	if !a.Enabled() {
		return zk.WorldACL(zk.PermAll)
	}
	return append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...)
}

// StoredACL is ACL as the server stores and reports it: the "auth" entry
// becomes the creator's digest identity. It is what a protected node must
// show when its ACL is read back.
func (a Auth) StoredACL() []zk.ACL {
	if !a.Enabled() {
		return zk.WorldACL(zk.PermAll)
	}
	return append(zk.DigestACL(zk.PermAll, a.user, a.password), zk.WorldACL(zk.PermRead)...)
}

// Authenticate adds the credential to conn (go-zookeeper re-sends it on
// every reconnect, before any queued request). It waits for the session,
// bounded by ctx, because a request sent before the credential would be
// anonymous. Without a credential it does nothing.
func (a Auth) Authenticate(ctx context.Context, conn *zk.Conn) error {
	if !a.Enabled() {
		return nil
	}
	if err := call0(ctx, func() error {
		return conn.AddAuth(SchemeDigest, []byte(a.user+":"+a.password))
	}); err != nil {
		return fmt.Errorf("authenticate as %s: %w", a, err)
	}
	return nil
}

// authTimeout bounds a recipe's wait for its first session and the
// server's answer to its credential: a worker that cannot authenticate
// must fail at start, not hang.
const authTimeout = 30 * time.Second

// authenticate is Authenticate for a recipe being built, bounded by
// authTimeout.
func authenticate(conn *zk.Conn, a Auth) error {
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	return a.Authenticate(ctx, conn)
}
