package nemesis

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkchaos/zkchaos/cluster"
	"github.com/zkchaos/zkchaos/history"
	"github.com/zkchaos/zkchaos/internal/ctxsleep"
)

func init() {
	register("rogue-client", func() Fault { return rogueClient{} })
	selects("rogue-client", "a key with a holder and a waiter")
}

// rogueClient is an ordinary ZooKeeper client that is not part of the lock
// protocol and has no credential: a misconfigured tool, a script run by
// hand, an attacker. The lock parent must be ACL-protected against
// exactly what it tries (docs/background.md#the-queue-lock-recipe), which
// it tries on a key that has a holder and at least one waiter:
//
//   - delete the lock root and the key node;
//   - forge a lock node: delete the holder's node, wait until the next
//     waiter has been granted the lock, then re-create a node at the
//     holder's exact path, so that the holder's release still finds its
//     node and answers ok: two holders, and neither learns of it;
//   - reset the sequence: empty the key node, delete it and create it
//     again, so the sequential counter (and any seq token) restarts at 0.
//
// With --acl on every attempt must be refused (NoAuth); with --acl off the
// damage happens, and every attempt and its outcome is recorded. The end
// operation records what the tampering left and removes the nodes the
// rogue forged.
type rogueClient struct{}

// LockTree is the optional part of Targets that rogue-client needs: where
// the run's locks live.
type LockTree interface {
	LockRoot() string
}

// Bounds of rogue-client. Every step is bounded by the context it is
// given as well: the scheduler's, or the end of the run.
const (
	// rogueBound bounds a whole injection or end.
	rogueBound = 30 * time.Second
	// rogueSession is the rogue's session timeout (the server clamps it).
	rogueSession = 4 * time.Second
	// rogueConnectWait bounds the wait for the rogue's session.
	rogueConnectWait = 5 * time.Second
	// rogueVictimWait bounds the search for a key with a holder and a
	// waiter.
	rogueVictimWait = 3 * time.Second
	// rogueGrantWait bounds the wait for another worker to be granted the
	// key once the holder's node is gone.
	rogueGrantWait = 5 * time.Second
	// rogueReleaseWait bounds the wait for the holder's release to delete
	// the forged node (before the reset, which would delete it).
	rogueReleaseWait = 5 * time.Second
)

func (rogueClient) Verbs() (string, string) { return history.FRogue, history.FRogueEnd }

func (rogueClient) Inject(ctx context.Context, env *Env) (*Effect, error) {
	tree, ok := env.Targets.(LockTree)
	if !ok {
		return nil, fmt.Errorf("%w: the targets do not say where the locks live (%w)", ErrNoTarget, cluster.ErrUnsupported)
	}
	addrs, err := serverAddrs(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	ctx, cancel := context.WithTimeout(ctx, rogueBound)
	defer cancel()
	conn, closeConn, err := dialRogue(ctx, addrs, env.Logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err) // nothing attempted
	}
	defer closeConn()
	vic, ok := findVictim(ctx, env, conn, tree.LockRoot())
	if !ok {
		return nil, fmt.Errorf("%w: no key with a holder and a waiter within %s", ErrNoTarget, rogueVictimWait)
	}
	a := &attack{conn: conn, env: env, root: tree.LockRoot(), vic: vic}
	a.run(ctx)
	v := history.Value{PID: vic.pid, TargetProcess: history.Int(vic.process), Target: vic.String(), Detail: a.detail()}
	end := rogueEnd{addrs: addrs, vic: vic, forged: a.forged, target: v}
	eff := &Effect{Value: v, Undo: end.undo}
	if n := a.count(outcomeUnknown); n > 0 {
		return eff, fmt.Errorf("%d attempts with an unknown outcome (connection lost or interrupted)", n)
	}
	return eff, nil
}

// dialRogue opens an anonymous session to the servers. Closing the
// connection when ctx ends is what bounds every call on it, because
// go-zookeeper's calls take no context.
func dialRogue(ctx context.Context, addrs []string, log *slog.Logger) (*zk.Conn, func(), error) {
	conn, _, err := zk.Connect(addrs, rogueSession, zk.WithLogger(zkDebugLog{log}))
	if err != nil {
		return nil, nil, fmt.Errorf("rogue client: connect: %w", err)
	}
	stop := context.AfterFunc(ctx, conn.Close)
	closeConn := func() { stop(); conn.Close() }
	start := time.Now()
	for conn.State() != zk.StateHasSession {
		if time.Since(start) > rogueConnectWait || !ctxsleep.Sleep(ctx, 10*time.Millisecond) {
			closeConn()
			return nil, nil, fmt.Errorf("rogue client: no session within %s", rogueConnectWait)
		}
	}
	return conn, closeConn, nil
}

// zkDebugLog sends go-zookeeper's connection chatter to the debug level.
type zkDebugLog struct{ l *slog.Logger }

func (z zkDebugLog) Printf(format string, args ...any) {
	if z.l != nil {
		z.l.Debug("rogue client: zk: " + fmt.Sprintf(format, args...))
	}
}

// victim is the holder whose lock the rogue goes after.
type victim struct {
	process, pid int
	key          string
	token        int64
	keyNode      string // root/key
	node         string // the holder's lock node
	waiters      int
	keyCzxid     int64 // the key node's before the attack
}

func (v victim) String() string {
	return fmt.Sprintf("process %d (pid %d) holding %s with token %d (node %s), %d waiting behind it",
		v.process, v.pid, v.key, v.token, v.node, v.waiters)
}

// candidate is a holder as the controller sees it.
type candidate struct {
	process, pid int
	key          string
	token        int64
	session      int64 // 0 when unknown
}

// candidates are the holders, from the client-side view when the targets
// give it: that one leaves out holders already releasing, whose release
// would race the forgery.
func candidates(env *Env) []candidate {
	var cs []candidate
	if ws, ok := env.Targets.(Workers); ok {
		for _, w := range ws.Workers() {
			if w.Holding {
				cs = append(cs, candidate{w.Process, w.PID, w.Key, w.Token, w.Session})
			}
		}
	} else {
		for _, h := range env.Targets.Holders() {
			cs = append(cs, candidate{h.Process, h.PID, h.Key, h.Token, 0})
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int { return a.process - b.process })
	return cs
}

// findVictim polls for a holder whose key has a waiter, choosing among
// them with the run's seeded source. The holder's node is found the way
// any client can (the queue is world-readable): the head of the key's
// queue, checked against the holder's token or session.
func findVictim(ctx context.Context, env *Env, conn *zk.Conn, root string) (victim, bool) {
	start := time.Now()
	for {
		var found []victim
		for _, c := range candidates(env) {
			if v, ok := queueHead(conn, root, c); ok && v.waiters > 0 {
				found = append(found, v)
			}
		}
		if len(found) > 0 {
			return found[env.Rand.IntN(len(found))], true
		}
		if time.Since(start) > rogueVictimWait || !ctxsleep.Sleep(ctx, 5*time.Millisecond) {
			return victim{}, false
		}
	}
}

// queueHead finds c's lock node at the head of its key's queue. Among the
// children of one parent, creation order is sequence order, so the head is
// the child with the lowest czxid.
func queueHead(conn *zk.Conn, root string, c candidate) (victim, bool) {
	keyNode := root + "/" + c.key
	children, keySt, err := conn.Children(keyNode)
	if err != nil || len(children) == 0 {
		return victim{}, false
	}
	var head string
	var headSt *zk.Stat
	for _, ch := range children {
		ok, st, err := conn.Exists(keyNode + "/" + ch)
		if err != nil || !ok {
			continue
		}
		if headSt == nil || st.Czxid < headSt.Czxid {
			head, headSt = ch, st
		}
	}
	if headSt == nil {
		return victim{}, false
	}
	ours := headSt.Czxid == c.token || strings.HasSuffix(head, fmt.Sprintf("%010d", c.token)) ||
		(c.session != 0 && headSt.EphemeralOwner == c.session)
	if !ours {
		return victim{}, false
	}
	return victim{process: c.process, pid: c.pid, key: c.key, token: c.token, keyNode: keyNode,
		node: keyNode + "/" + head, waiters: len(children) - 1, keyCzxid: keySt.Czxid}, true
}
